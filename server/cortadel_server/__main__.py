from cortadel_server.cli import main

main()
