# Writes OUT: the shipped diagnosis rules (IN) as string data, so that an
# installed binary carries its default rules (as it carries its migrations).
file(READ ${IN} text)
string(FIND "${text}" ")dcurules\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )dcurules\"")
endif()
file(WRITE ${OUT} "// Generated from deploy/diagnosis/rules.txtpb by embed_rules.cmake.\n#include \"modelkit/diagnosis/embedded_rules.h\"\n\nnamespace dcu::modelkit {\n\nabsl::string_view EmbeddedDiagnosisRulesText() {\n  static constexpr char kText[] = R\"dcurules(${text})dcurules\";\n  return absl::string_view(kText, sizeof(kText) - 1);\n}\n\n}  // namespace dcu::modelkit\n")
