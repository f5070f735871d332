"""Build the Cython extensions; everything else is declared in pyproject.toml.

``_engine`` is the compiled host engine: the device runtime in csrc/ built into the package (see _engine.pyx).
"""
from pathlib import Path

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

NUMPY = {"include_dirs": [numpy.get_include()], "define_macros": [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]}
RUNTIME = sorted(str(path) for path in Path("csrc").glob("es_*.c"))
HEADERS = sorted(str(path) for path in [*Path("csrc").glob("es_*.h"), Path("edgestream/_engine_learners.h")])

extensions = [Extension(f"edgestream.{name}", [f"edgestream/{name}.pyx"], **NUMPY) for name in ("_kernels", "_gbdt")]
# The runtime's float arithmetic must not be contracted into fused multiply-adds (it is checked bit for bit); -O3
# vectorizes its elementwise loops (never a reduction: no -ffast-math), which changes no result;
# -fno-semantic-interposition lets a runtime file's exported functions inline within it. ES_HOST_ENGINE selects
# the runtime's host forms of a step (more memory for speed, the same results).
extensions.append(Extension("edgestream._engine", ["edgestream/_engine.pyx", *RUNTIME],
                            include_dirs=[*NUMPY["include_dirs"], "csrc", "edgestream"],
                            define_macros=[*NUMPY["define_macros"], ("ES_HOST_ENGINE", "1")],
                            extra_compile_args=["-O3", "-ffp-contract=off", "-fno-semantic-interposition"],
                            depends=HEADERS))

setup(ext_modules=cythonize(extensions, language_level=3))
