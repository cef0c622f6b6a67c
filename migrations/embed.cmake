# Writes OUT: EmbeddedMigrations(Dialect) over every FILES entry. The
# PostgreSQL list takes PG_DIR/NNNN_name.sql where one exists (the dialects
# differ: BYTEA for BLOB, BIGINT for millisecond times, identity columns for
# AUTOINCREMENT) and the shared file otherwise, so both lists always have the
# same versions and names.
string(REPLACE " " ";" FILES "${FILES}")
set(sqlite_body "")
set(pg_body "")
foreach(f ${FILES})
  get_filename_component(name ${f} NAME_WE)
  string(SUBSTRING ${name} 0 4 num)
  math(EXPR version "${num} + 0")
  file(READ ${f} sql)
  string(APPEND sqlite_body "      {${version}, \"${name}\", R\"dcusql(${sql})dcusql\"},\n")
  if(EXISTS "${PG_DIR}/${name}.sql")
    file(READ "${PG_DIR}/${name}.sql" sql)
  endif()
  string(APPEND pg_body "      {${version}, \"${name}\", R\"dcusql(${sql})dcusql\"},\n")
endforeach()
set(body "#include \"migrations/embedded_migrations.h\"\n\nnamespace dcu::migrations {\n\n")
string(APPEND body "const std::vector<Migration>& EmbeddedMigrations(Dialect dialect) {\n")
string(APPEND body "  static const std::vector<Migration>* sqlite = new std::vector<Migration>{\n${sqlite_body}  };\n")
string(APPEND body "  static const std::vector<Migration>* postgres = new std::vector<Migration>{\n${pg_body}  };\n")
string(APPEND body "  return dialect == Dialect::kPostgres ? *postgres : *sqlite;\n}\n\n}  // namespace dcu::migrations\n")
file(WRITE ${OUT} "${body}")
