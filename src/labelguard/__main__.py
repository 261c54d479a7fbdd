from labelguard.cli import main

main()
