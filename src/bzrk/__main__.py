from bzrk.cli.main import main

main()
