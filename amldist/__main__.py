from amldist.cli.main import run

run()
