import sys

from amldist.cli.main import main

sys.exit(main())
