#include "dcuctl/terminal_safe.h"

#include "absl/strings/str_format.h"
#include "common/redraw.h"

namespace dcu::dcuctl {
namespace {

bool IsC0OrDel(unsigned char c) { return (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f; }

std::string Escaped(unsigned char c) { return absl::StrFormat("\\x%02x", c); }

}  // namespace

std::string TerminalSafe(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (IsC0OrDel(c)) {
      out += Escaped(c);
    } else if (c == 0xc2 && i + 1 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      out += Escaped(static_cast<unsigned char>(text[i + 1]));
      ++i;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

bool TerminalSafeStreambuf::Put(unsigned char c) {
  auto put = [&](absl::string_view s) {
    return sink_->sputn(s.data(), static_cast<std::streamsize>(s.size())) ==
           static_cast<std::streamsize>(s.size());
  };
  if (pending_c2_) {
    pending_c2_ = false;
    if (c >= 0x80 && c <= 0x9f) return put(Escaped(c));
    if (!put("\xc2")) return false;
  }
  if (c == 0xc2) {
    pending_c2_ = true;
    return true;
  }
  if (IsC0OrDel(c)) return put(Escaped(c));
  return sink_->sputc(static_cast<char>(c)) != traits_type::eof();
}

TerminalSafeStreambuf::int_type TerminalSafeStreambuf::overflow(int_type ch) {
  if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
  return Put(static_cast<unsigned char>(traits_type::to_char_type(ch))) ? ch : traits_type::eof();
}

std::streamsize TerminalSafeStreambuf::xsputn(const char* s, std::streamsize n) {
  for (std::streamsize i = 0; i < n; ++i) {
    if (!Put(static_cast<unsigned char>(s[i]))) return i;
  }
  return n;
}

bool TerminalSafeStreambuf::WriteControl(absl::string_view control) {
  if (pending_c2_) {
    pending_c2_ = false;
    if (sink_->sputc('\xc2') == traits_type::eof()) return false;
  }
  return sink_->sputn(control.data(), static_cast<std::streamsize>(control.size())) ==
         static_cast<std::streamsize>(control.size());
}

void WriteTerminalControl(std::ostream& out, absl::string_view control) {
  if (auto* filter = dynamic_cast<TerminalSafeStreambuf*>(out.rdbuf())) {
    if (!filter->WriteControl(control)) out.setstate(std::ios::badbit);
    return;
  }
  out << control;
}

void LiveLine::Show(absl::string_view text) {
  if (!on_) return;
  std::string line = TerminalSafe(common::LastRedraw(text));
  // Cut at a character boundary (UTF-8 continuation bytes are 10xxxxxx),
  // counting characters as columns: close enough for a bar's text.
  size_t chars = 0, cut = line.size();
  for (size_t i = 0; i < line.size(); ++i) {
    if ((static_cast<unsigned char>(line[i]) & 0xc0) == 0x80) continue;
    if (++chars > columns_ - 1) {
      cut = i;
      break;
    }
  }
  line.resize(cut);
  if (line == shown_) return;
  WriteTerminalControl(out_, kRedrawLine);
  out_ << line << std::flush;
  shown_ = std::move(line);
}

void LiveLine::Clear() {
  if (!on_ || shown_.empty()) return;
  WriteTerminalControl(out_, kRedrawLine);
  out_.flush();
  shown_.clear();
}

int TerminalSafeStreambuf::sync() {
  // A lone 0xC2 at a flush is not the start of a C1 control we can still
  // see completed before the reader does: pass it on.
  if (pending_c2_) {
    pending_c2_ = false;
    if (sink_->sputc('\xc2') == traits_type::eof()) return -1;
  }
  return sink_->pubsync();
}

}  // namespace dcu::dcuctl
