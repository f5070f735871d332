"""Build the Cython kernels; everything else is declared in pyproject.toml."""
import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

extensions = [
    Extension(
        f"edgestream.{name}",
        [f"edgestream/{name}.pyx"],
        include_dirs=[numpy.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )
    for name in ("_kernels", "_gbdt")
]

setup(ext_modules=cythonize(extensions, language_level=3))
