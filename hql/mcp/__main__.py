"""`python -m hql.mcp --vault DIR`: the same as `hql mcp --vault DIR`."""

import sys

from hql.cli import main

sys.exit(main(["mcp", *sys.argv[1:]]))
