"""Board profiles (TOML) shipped with edgestream; read them with edgestream.boards."""
