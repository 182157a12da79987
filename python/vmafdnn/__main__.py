"""``python -m vmafdnn``: the command line tool. Importing this module (as
pydoc, pkgutil.walk_packages or a doctest collector do) runs nothing."""
import sys

if __name__ == "__main__":
    from ._console import main

    sys.exit(main())
