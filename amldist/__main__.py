import sys

from amldist.cli import main

sys.exit(main())
