from projector.runtime.host.daemon import main

main()
