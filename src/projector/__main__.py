from projector.entry import main

main()
