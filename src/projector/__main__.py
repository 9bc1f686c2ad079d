from projector.cli import main

main()
