"""The compiled parts of perftriage, all optional (everything else is in pyproject.toml):
- the CTF reader's C decoder over libbabeltrace2 (analysis/ctf/_decode.c): without gcc,
  python3-dev or libbabeltrace2-dev the build skips it and the reader uses its Python decoder
  (`perftriage info` says which decoder read);
- the critical-path walk (analysis/requests/_walk.c): without it the Python walk, the same
  paths, about 10x slower;
- the Förstner–Moonen distances of the thread bootstrap (analysis/threads/_fm.c): without it
  numpy's, the same distances, the bootstrap about 2.5x slower."""

from setuptools import Extension, setup

# the header both share; listed so that a change to it rebuilds them
HEADERS = ["analysis/growbuf.h"]

setup(
    ext_modules=[
        Extension(
            "perftriage.analysis.ctf._decode",
            ["analysis/ctf/_decode.c"],
            depends=HEADERS,
            libraries=["babeltrace2"],
            include_dirs=["analysis"],  # growbuf.h
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "perftriage.analysis.requests._walk",
            ["analysis/requests/_walk.c"],
            depends=HEADERS,
            libraries=["m"],
            include_dirs=["analysis"],  # growbuf.h
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "perftriage.analysis.threads._fm",
            ["analysis/threads/_fm.c"],
            libraries=["m"],
            # vectorised over 8 pairs: -O3, and square roots and selects the compiler may run on
            # all lanes (no errno, no floating-point traps; the values are IEEE's all the same)
            extra_compile_args=["-O3", "-fno-math-errno", "-fno-trapping-math"],
            optional=True,
        ),
    ]
)
