"""The one compiled part of perftriage: the CTF reader's C decoder over libbabeltrace2
(analysis/ctf/_decode.c). Everything else is declared in pyproject.toml. The extension is
optional: without gcc, python3-dev or libbabeltrace2-dev the build skips it and the reader uses
its Python decoder (`perftriage info` says which decoder read)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "perftriage.analysis.ctf._decode",
            ["analysis/ctf/_decode.c"],
            libraries=["babeltrace2"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)
