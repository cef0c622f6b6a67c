# Writes OUT: a shipped text file (IN, by default the diagnosis rules) as
# string data returned by FUNC (default EmbeddedDiagnosisRulesText), so that
# an installed binary carries its defaults (as it carries its migrations).
if(NOT DEFINED FUNC)
  set(FUNC EmbeddedDiagnosisRulesText)
endif()
file(READ ${IN} text)
string(FIND "${text}" ")dcurules\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )dcurules\"")
endif()
get_filename_component(name ${IN} NAME)
file(WRITE ${OUT} "// Generated from deploy/diagnosis/${name} by embed_rules.cmake.\n#include \"modelkit/diagnosis/embedded_rules.h\"\n\nnamespace dcu::modelkit {\n\nabsl::string_view ${FUNC}() {\n  static constexpr char kText[] = R\"dcurules(${text})dcurules\";\n  return absl::string_view(kText, sizeof(kText) - 1);\n}\n\n}  // namespace dcu::modelkit\n")
