#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "google/protobuf/message.h"
#include <nlohmann/json.hpp>

namespace dcu::dcuctl {

// A plain-text table with a header row, columns padded to fit, like kubectl.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  // `header` false: the rows only (--no-headers).
  void Print(std::ostream& out, bool header = true) const;
  bool empty() const { return rows_.empty(); }
  // Each column's width as Print lays it out.
  std::vector<size_t> Widths() const;
  // One row padded to `widths` (a later row of a --watch lines up with the
  // table printed first), trailing blanks dropped.
  static std::string FormatRow(const std::vector<std::string>& row, const std::vector<size_t>& widths);

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Protobuf message -> JSON with the proto field names and enum names.
// Timestamps are RFC 3339 UTC with milliseconds ("2026-12-01T17:20:00.123Z"),
// null when unset (0): every int64 field named `at_ms` or ending in `_at_ms`,
// `_seen_ms` or `_since_ms`, printed under its name without `_ms`
// (`created_at_ms` -> `created_at`). Other 64-bit integers stay JSON strings,
// as proto3's JSON mapping has them (docs/dcuctl.md "Output").
nlohmann::json ProtoToJson(const google::protobuf::Message& message);
// The inverse, for what a person gives back (dcuctl apply -f): timestamps
// as ProtoToJson prints them (RFC 3339 or null, under the name without
// `_ms`) or as the proto's own `_ms` integers; a field the message does not
// have is refused, named, as kubectl's strict validation does.
absl::Status JsonToProto(nlohmann::json j, google::protobuf::Message* message);

// True for a timestamp field name by that convention.
bool IsTimestampField(const std::string& name);
// "2026-12-01T17:20:00.123Z".
std::string Rfc3339(int64_t unix_ms);

// Block-style YAML of a JSON value (strings quoted when needed).
std::string ToYaml(const nlohmann::json& value);

// Prints `value` as "json" (indented) or "yaml".
void PrintStructured(const nlohmann::json& value, const std::string& format, std::ostream& out);

// The -o values: table, wide, json, yaml, name, jsonpath=TEMPLATE.
// INVALID_ARGUMENT naming the choices, or the template's problem.
absl::Status CheckOutputFormat(const std::string& format);
// True for the formats printed from the JSON document (json, yaml, jsonpath=).
bool IsDocumentFormat(const std::string& format);
// Prints `document` as json, yaml or jsonpath=TEMPLATE (no newline added, as
// kubectl). Returns the exit code (2 with a line on `err` when the template
// cannot be run).
int PrintDocument(const nlohmann::json& document, const std::string& format, std::ostream& out,
                  std::ostream& err);

// "5s ago", "3m12s ago" from a unix-ms timestamp ("-" when 0).
std::string Ago(int64_t unix_ms);
// An AGE column's cell, as kubectl's: "3m12s" ("-" when 0).
std::string Age(int64_t unix_ms);

// A long evidence line keeps its start and its end: the word that matters is
// usually last ("... error: unsupported target: 'gfx928'" was cut right
// before 'gfx928').
std::string ShortenKeepingEnd(const std::string& line, size_t max);

// What a finding's remediation does, as read after "→ ": "failover", not
// "failover: failover"; "auto: set_env".
std::string RemediationWords(const std::string& kind, const std::string& action);

}  // namespace dcu::dcuctl
