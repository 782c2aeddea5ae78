"""Whether JupyterLab will find gpu-workbench's Lab extension, and what to do when not.

The Lab extension is TypeScript, built by npm when pip builds gpu-workbench
(hatch-jupyter-builder, pyproject.toml). An editable install on a machine without
Node.js must still work (the kernel, ``gpuwb demo``), so there the build only warns, and
pip hides a successful build's output: the install ends quietly with no status-bar item
and no panel in Lab, and ``jupyter labextension list`` without gpu-workbench. The server
extension calls :func:`lab_extension_problem` as it loads and, when it answers, logs it
where the user starts ``jupyter lab``: what is missing and how to get it.
"""

from __future__ import annotations

from pathlib import Path

from jupyter_core.paths import jupyter_path

__all__ = ["LAB_EXTENSION", "lab_extension_problem"]

#: the Lab extension's name (labextension/package.json), its directory under labextensions/
LAB_EXTENSION = "gpu-workbench"


def lab_extension_problem(paths: list[str] | None = None) -> str | None:
    """None when a built gpu-workbench Lab extension lies in one of *paths* (default:
    Jupyter's ``labextensions`` directories, where JupyterLab looks); else what to tell
    the user."""
    paths = jupyter_path("labextensions") if paths is None else paths
    for base in paths:
        if (Path(base) / LAB_EXTENSION / "package.json").is_file():
            return None
    return (
        "the gpu-workbench JupyterLab extension is not installed, so JupyterLab shows no GPU "
        "status-bar item and no GPU pool panel (the kernel and %gpu work without it). pip "
        "builds it only where Node.js >= 20 and npm are on PATH, and an install without them "
        "succeeds quietly. Install Node.js, then install gpu-workbench again (in a checkout: "
        "pip install -e '.[lab]'); `jupyter labextension list` then shows gpu-workbench "
        "(python, gpu-workbench). Looked in: " + ", ".join(str(p) for p in paths))
