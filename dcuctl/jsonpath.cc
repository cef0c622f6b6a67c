#include "dcuctl/jsonpath.h"

#include <cctype>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status_util.h"

namespace dcu::dcuctl {

// One step of a path: a field, every value ([*] / .*), or an index.
struct JsonPathTemplate::Step {
  enum Kind { kField, kAll, kIndex } kind = kField;
  std::string field;
  long long index = 0;
};

// Literal text, a path to print, or a {range PATH}...{end} block.
struct JsonPathTemplate::Node {
  enum Kind { kText, kPath, kRange } kind = kText;
  std::string text;
  bool from_root = false;  // "$..." rather than relative to the current value
  std::vector<Step> steps;
  std::vector<Node> body;  // kRange
};

namespace {

using Node = JsonPathTemplate::Node;
using Step = JsonPathTemplate::Step;

absl::Status Error(size_t pos, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("jsonpath: column ", pos + 1, ": ", what));
}

std::string Quote(char c) {
  if (std::isprint(static_cast<unsigned char>(c))) return absl::StrCat("'", std::string(1, c), "'");
  return absl::StrCat("byte 0x", absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
}

bool IsIdent(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
}

// Parses the inside of one {...}: `expr` starts at `base` in the template.
class ExprParser {
 public:
  ExprParser(absl::string_view expr, size_t base) : s_(expr), base_(base) {}

  absl::Status ParsePath(Node* node) {
    SkipSpace();
    if (i_ < s_.size() && (s_[i_] == '$' || s_[i_] == '@')) {
      node->from_root = s_[i_] == '$';
      ++i_;
    } else if (i_ >= s_.size() || (s_[i_] != '.' && s_[i_] != '[')) {
      return Error(base_ + i_, i_ >= s_.size()
                                   ? std::string("expected a path such as .field")
                                   : absl::StrCat("expected a path such as .field, found ",
                                                  Quote(s_[i_])));
    }
    while (true) {
      SkipSpace();
      if (i_ >= s_.size()) break;
      const char c = s_[i_];
      if (c == '.') {
        ++i_;
        if (i_ >= s_.size() || s_[i_] == ' ') {
          // "{.}" is the current value itself.
          if (node->steps.empty()) break;
          return Error(base_ + i_ - 1, "a '.' must be followed by a field name");
        }
        if (s_[i_] == '.') return Error(base_ + i_, "recursive descent '..' is not supported");
        if (s_[i_] == '*') {
          ++i_;
          node->steps.push_back({Step::kAll, "", 0});
          continue;
        }
        if (s_[i_] == '[') continue;  // ".[0]" reads as "[0]"
        size_t start = i_;
        while (i_ < s_.size() && IsIdent(s_[i_])) ++i_;
        if (i_ == start) {
          return Error(base_ + i_, absl::StrCat("expected a field name after '.', found ", Quote(s_[i_])));
        }
        node->steps.push_back({Step::kField, std::string(s_.substr(start, i_ - start)), 0});
      } else if (c == '[') {
        DCU_RETURN_IF_ERROR(ParseBracket(node));
      } else {
        return Error(base_ + i_, absl::StrCat("unexpected ", Quote(c), " in a path"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status ParseBracket(Node* node) {
    const size_t open = i_++;
    SkipSpace();
    if (i_ >= s_.size()) return Error(base_ + open, "'[' is not closed by ']'");
    if (s_[i_] == '*') {
      ++i_;
      node->steps.push_back({Step::kAll, "", 0});
    } else if (s_[i_] == '\'' || s_[i_] == '"') {
      const char q = s_[i_++];
      size_t start = i_;
      while (i_ < s_.size() && s_[i_] != q) ++i_;
      if (i_ >= s_.size()) return Error(base_ + start - 1, "quoted field name is not closed");
      node->steps.push_back({Step::kField, std::string(s_.substr(start, i_ - start)), 0});
      ++i_;
    } else if (s_[i_] == '?') {
      return Error(base_ + i_, "filters [?(...)] are not supported");
    } else {
      size_t start = i_;
      if (i_ < s_.size() && s_[i_] == '-') ++i_;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
      long long index = 0;
      if (i_ < s_.size() && s_[i_] == ':') return Error(base_ + i_, "slices [a:b] are not supported");
      if (!absl::SimpleAtoi(s_.substr(start, i_ - start), &index) || i_ - start > 9) {
        return Error(base_ + start, "expected an index, '*' or a quoted field name inside [...]");
      }
      node->steps.push_back({Step::kIndex, "", index});
    }
    SkipSpace();
    if (i_ >= s_.size() || s_[i_] != ']') {
      return Error(base_ + (i_ < s_.size() ? i_ : open), i_ < s_.size()
                                                             ? absl::StrCat("expected ']', found ", Quote(s_[i_]))
                                                             : std::string("'[' is not closed by ']'"));
    }
    ++i_;
    return absl::OkStatus();
  }

  size_t pos() const { return i_; }

 private:
  void SkipSpace() {
    while (i_ < s_.size() && s_[i_] == ' ') ++i_;
  }
  absl::string_view s_;
  size_t base_;
  size_t i_ = 0;
};

// A quoted literal {"..."}; `q` is at s[0].
absl::StatusOr<std::string> ParseLiteral(absl::string_view s, size_t base) {
  const char q = s[0];
  std::string out;
  size_t i = 1;
  for (; i < s.size() && s[i] != q; ++i) {
    if (s[i] == '\\') {
      if (++i >= s.size()) break;
      switch (s[i]) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '\\': out += '\\'; break;
        case '"': out += '"'; break;
        case '\'': out += '\''; break;
        default:
          return Error(base + i, absl::StrCat("unknown escape \\", std::string(1, s[i]),
                                              " (use \\n, \\t, \\r, \\\\ or \\\")"));
      }
    } else {
      out += s[i];
    }
  }
  if (i >= s.size()) return Error(base, "quoted text is not closed");
  for (size_t j = i + 1; j < s.size(); ++j) {
    if (s[j] != ' ') return Error(base + j, "text after a quoted literal");
  }
  return out;
}

// Parses the template into nodes; `ranges` tracks open {range} positions.
absl::Status ParseTemplate(absl::string_view t, std::vector<Node>* root) {
  std::vector<std::vector<Node>*> stack = {root};
  std::vector<size_t> open_ranges;
  std::string text;
  auto flush = [&] {
    if (text.empty()) return;
    Node n;
    n.kind = Node::kText;
    n.text = std::move(text);
    text.clear();
    stack.back()->push_back(std::move(n));
  };
  size_t i = 0;
  while (i < t.size()) {
    const char c = t[i];
    if (c == '}') return Error(i, "'}' without a '{' before it");
    if (c != '{') {
      text += c;
      ++i;
      continue;
    }
    // Find the matching '}' (quotes may hold braces).
    size_t j = i + 1;
    char quote = 0;
    for (; j < t.size(); ++j) {
      if (quote) {
        if (t[j] == '\\') {
          ++j;
        } else if (t[j] == quote) {
          quote = 0;
        }
      } else if (t[j] == '"' || t[j] == '\'') {
        quote = t[j];
      } else if (t[j] == '{') {
        return Error(j, "'{' inside '{...}' (is a '}' missing before it?)");
      } else if (t[j] == '}') {
        break;
      }
    }
    if (j >= t.size()) return Error(i, "'{' is not closed by '}'");
    flush();
    absl::string_view inner = t.substr(i + 1, j - i - 1);
    size_t base = i + 1;
    size_t lead = 0;
    while (lead < inner.size() && inner[lead] == ' ') ++lead;
    inner.remove_prefix(lead);
    base += lead;
    while (!inner.empty() && inner.back() == ' ') inner.remove_suffix(1);
    if (inner.empty()) return Error(i, "empty '{}'");
    if (inner == "end") {
      if (open_ranges.empty()) return Error(base, "{end} without a {range} before it");
      open_ranges.pop_back();
      stack.pop_back();
    } else if (inner.substr(0, 6) == "range " || inner == "range") {
      if (static_cast<int>(open_ranges.size()) >= JsonPathTemplate::kMaxRangeDepth) {
        return Error(base, absl::StrCat("{range} nested deeper than ", JsonPathTemplate::kMaxRangeDepth));
      }
      Node n;
      n.kind = Node::kRange;
      if (inner == "range") return Error(base + 5, "{range} needs a path: {range .items[*]}");
      ExprParser p(inner.substr(6), base + 6);
      absl::Status s = p.ParsePath(&n);
      if (!s.ok()) return s;
      stack.back()->push_back(std::move(n));
      stack.push_back(&stack.back()->back().body);
      open_ranges.push_back(base);
    } else if (inner[0] == '"' || inner[0] == '\'') {
      auto lit = ParseLiteral(inner, base);
      if (!lit.ok()) return lit.status();
      Node n;
      n.kind = Node::kText;
      n.text = *std::move(lit);
      stack.back()->push_back(std::move(n));
    } else {
      Node n;
      n.kind = Node::kPath;
      ExprParser p(inner, base);
      absl::Status s = p.ParsePath(&n);
      if (!s.ok()) return s;
      stack.back()->push_back(std::move(n));
    }
    i = j + 1;
  }
  if (!open_ranges.empty()) return Error(open_ranges.back(), "{range} is not closed by {end}");
  flush();
  return absl::OkStatus();
}

// The values a path selects from `current`.
std::vector<const nlohmann::json*> Select(const Node& n, const nlohmann::json& document,
                                          const nlohmann::json& current) {
  std::vector<const nlohmann::json*> values = {n.from_root ? &document : &current};
  for (const Step& step : n.steps) {
    std::vector<const nlohmann::json*> next;
    for (const nlohmann::json* v : values) {
      switch (step.kind) {
        case Step::kField:
          if (v->is_object()) {
            auto it = v->find(step.field);
            if (it != v->end()) next.push_back(&*it);
          }
          break;
        case Step::kAll:
          if (v->is_array() || v->is_object()) {
            for (const auto& e : *v) next.push_back(&e);
          }
          break;
        case Step::kIndex:
          if (v->is_array()) {
            long long size = static_cast<long long>(v->size());
            long long k = step.index < 0 ? size + step.index : step.index;
            if (k >= 0 && k < size) next.push_back(&(*v)[static_cast<size_t>(k)]);
          }
          break;
      }
    }
    values = std::move(next);
  }
  return values;
}

bool IteratesByItself(const Node& n) {
  for (const Step& s : n.steps) {
    if (s.kind == Step::kAll) return true;
  }
  return false;
}

std::string Render(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();
}

absl::Status Run(const std::vector<Node>& nodes, const nlohmann::json& document,
                 const nlohmann::json& current, std::string* out) {
  for (const Node& n : nodes) {
    if (out->size() > JsonPathTemplate::kMaxOutputBytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "jsonpath: the output passed ", JsonPathTemplate::kMaxOutputBytes >> 20,
          " MiB; narrow the template (or use -o json)"));
    }
    switch (n.kind) {
      case Node::kText:
        *out += n.text;
        break;
      case Node::kPath: {
        bool first = true;
        for (const nlohmann::json* v : Select(n, document, current)) {
          if (!first) *out += ' ';
          first = false;
          *out += Render(*v);
        }
        break;
      }
      case Node::kRange: {
        std::vector<const nlohmann::json*> items = Select(n, document, current);
        // {range .items} walks the list, as {range .items[*]} does.
        if (items.size() == 1 && items[0]->is_array() && !IteratesByItself(n)) {
          std::vector<const nlohmann::json*> elems;
          for (const auto& e : *items[0]) elems.push_back(&e);
          items = std::move(elems);
        }
        for (const nlohmann::json* item : items) {
          absl::Status s = Run(n.body, document, *item, out);
          if (!s.ok()) return s;
        }
        break;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<JsonPathTemplate> JsonPathTemplate::Parse(absl::string_view text) {
  if (text.size() > kMaxTemplateBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("jsonpath: the template is ", text.size(), " bytes; at most ", kMaxTemplateBytes));
  }
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\0') return Error(i, "a NUL byte");
  }
  auto nodes = std::make_shared<std::vector<Node>>();
  absl::Status s = ParseTemplate(text, nodes.get());
  if (!s.ok()) return s;
  JsonPathTemplate t;
  t.nodes_ = std::move(nodes);
  return t;
}

absl::StatusOr<std::string> JsonPathTemplate::Execute(const nlohmann::json& document) const {
  std::string out;
  absl::Status s = Run(*nodes_, document, document, &out);
  if (!s.ok()) return s;
  return out;
}

}  // namespace dcu::dcuctl
