"""Where gacc's tools and runtime library are: GACC_TOOLS_DIR and
GACC_LIB_DIR when set, else the folders that the build or `cmake --install`
wrote into `_paths.py`, else `bin/` and `lib/` two levels above this package
(the build tree's `build/python/gacc`)."""

import os

try:
    from . import _paths
except ImportError:  # the source tree, not a build or install
    _paths = None

_HERE = os.path.dirname(os.path.abspath(__file__))


def _dir(env, attr, sub):
    if os.environ.get(env):
        return os.environ[env]
    if _paths is not None:
        return getattr(_paths, attr)
    return os.path.normpath(os.path.join(_HERE, "..", "..", sub))


def tools_dir():
    return _dir("GACC_TOOLS_DIR", "TOOLS_DIR", "bin")


def lib_dir():
    return _dir("GACC_LIB_DIR", "LIB_DIR", "lib")


def tool(name):
    path = os.path.join(tools_dir(), name)
    if not os.path.exists(path):
        raise FileNotFoundError(
            "gacc: %s not found in %s (build gacc, or set GACC_TOOLS_DIR)" %
            (name, tools_dir()))
    return path
