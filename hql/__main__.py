import sys

from hql.cli import main

sys.exit(main())
