import sys

if __name__ == "__main__":  # worker processes import this module without running it
    from hql.served import main

    sys.exit(main())
