"""Every notebook in examples/ runs top to bottom without an error (nbclient, a real kernel)."""

import atexit
import shutil
import tempfile

import pytest
from tests.paths import PROJECT_ROOT

EXAMPLES = sorted((PROJECT_ROOT / "examples").glob("*.ipynb"))


def _read(path):
    # (nbformat and nbclient imported here, not at the top: nbformat's JSON-schema checker
    # takes about a second to import, and every test process collects this file)
    import nbformat
    return nbformat.read(path, as_version=4)


def NotebookClient(nb, kernel_name="python3", **kwargs):
    """nbclient's client, its kernel's channels Unix sockets in a directory of its own
    (tests/ipc_kernels.py says why)."""
    from nbclient import NotebookClient
    from tests.ipc_kernels import ipc_kernel_manager
    directory = tempfile.mkdtemp(prefix="gpuwb-nb-kernel-")
    atexit.register(shutil.rmtree, directory, True)
    km = ipc_kernel_manager(kernel_name, directory)
    return NotebookClient(nb, km=km, kernel_name=kernel_name, **kwargs)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_notebook_runs(path, tmp_path):
    nb = _read(path)
    kernel = nb.metadata.get("kernelspec", {}).get("name", "python3")
    NotebookClient(nb, timeout=120, kernel_name=kernel, resources={"metadata": {"path": str(tmp_path)}}).execute()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        expected = "raises-exception" in cell.metadata.get("tags", [])
        assert bool(errors) == expected, (cell.source, errors)


def test_quickstart_error_names_the_op_and_cell_line():
    path = next(p for p in EXAMPLES if p.name == "quickstart.ipynb")
    nb = _read(path)
    NotebookClient(nb, timeout=300, kernel_name="remote-gpu", allow_errors=True).execute()
    failing = next(c for c in nb.cells if "raises-exception" in c.metadata.get("tags", []))
    error = next(o for o in failing.outputs if o["output_type"] == "error")
    text = "\n".join(error["traceback"])
    assert error["ename"] == "ValueError" and "operator +" in text and "line 2 of cell" in text


def test_catalog_notebook_shows_html_tables():
    path = next(p for p in EXAMPLES if p.name == "catalog.ipynb")
    nb = _read(path)
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    html = [o["data"]["text/html"] for cell in nb.cells if cell.cell_type == "code"
            for o in cell.get("outputs", []) if "text/html" in o.get("data", {})]
    assert any("<table" in h and "<a href=" in h and "REEF" in h for h in html)
