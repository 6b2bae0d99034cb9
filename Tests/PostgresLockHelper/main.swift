// Child process for PostgresLock's multi-process tests (Tests/InterlockPostgresTests).
print("interlock-pg-helper: no subcommand yet")
