import sys

from hql.cli import main

if __name__ == "__main__":  # worker processes import this module without running it
    sys.exit(main())
