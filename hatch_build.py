"""Build hook: compile the held op's accelerator (``kernelproxy/_held_ops.c``) at install.

One C file with no dependencies beyond Python's headers, compiled with the compiler Python
was built with (``sysconfig``'s ``CC``), into the source tree beside the package: an
editable install (the README's ``pip install -e .``) loads it from there, a wheel carries it
(and is then tagged for this Python and platform). Where no compiler works the install goes
on without it and the client runs its pure-Python methods (kernelproxy/held_ops.py says so
in ``AVAILABLE``), which stay the reference either way.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sysconfig

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = os.path.join("kernelproxy", "_held_ops.c")


def compile_accelerator(root: str) -> tuple[str | None, str]:
    """Compile SOURCE under *root*: (the library's path relative to *root*, or None where it
    failed; the compiler's complaint)."""
    target = os.path.join("kernelproxy", "_held_ops" + sysconfig.get_config_var("EXT_SUFFIX"))
    compiler = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    command = [*compiler, "-O2", "-fPIC", "-shared", "-fno-strict-aliasing",
               "-I", sysconfig.get_paths()["include"],
               os.path.join(root, SOURCE), "-o", os.path.join(root, target)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, str(exc)
    if done.returncode != 0:
        return None, (done.stderr or done.stdout).strip()
    return target, ""


class CustomBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel":
            return   # (an sdist carries the C source)
        target, complaint = compile_accelerator(self.root)
        if target is None:
            self.app.display_warning(
                "gpu-workbench: the held op's accelerator (kernelproxy/_held_ops.c) was not "
                f"compiled, the client runs its Python methods instead: {complaint[-2000:]}")
            return
        if version != "editable":   # (an editable install loads it from the tree)
            build_data["force_include"][os.path.join(self.root, target)] = target
            build_data["pure_python"] = False
            build_data["infer_tag"] = True
