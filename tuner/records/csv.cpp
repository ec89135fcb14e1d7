#include "tuner/records/csv.h"

namespace tilesmith::csv {

std::string quote_field(std::string_view field) {
  if (field.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(field);
  std::string out;
  out.reserve(field.size() + 2);
  out.push_back('"');
  for (char c : field) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

std::string format_record(const std::vector<std::string>& fields) {
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) out.push_back(',');
    out += quote_field(fields[i]);
  }
  out.push_back('\n');
  return out;
}

Result<Parsed> parse(std::string_view text) {
  Parsed out;
  std::size_t i = 0, line = 1;
  const std::size_t n = text.size();
  while (i < n) {
    Record rec;
    rec.offset = i;
    rec.line = line;
    std::string field;
    bool complete = false;
    // One record: fields until a newline outside quotes.
    while (i < n) {
      if (text[i] == '"' && field.empty()) {
        // Quoted field: up to the closing quote ("" is a literal quote).
        std::size_t j = i + 1;
        bool closed = false;
        while (j < n) {
          if (text[j] == '"') {
            if (j + 1 < n && text[j + 1] == '"') {
              field.push_back('"');
              j += 2;
              continue;
            }
            closed = true;
            ++j;
            break;
          }
          if (text[j] == '\n') ++line;
          field.push_back(text[j]);
          ++j;
        }
        if (!closed) {  // the quote never closes: a torn tail
          i = n;
          break;
        }
        i = j;
        if (i < n && text[i] != ',' && text[i] != '\n' && text[i] != '\r')
          return Status::parse_error("line " + std::to_string(line) + ": text after a closing quote");
        // A quoted field is followed by a delimiter; mark it so an empty quoted field
        // is not taken for "no field yet".
        if (i >= n) break;
      } else {
        while (i < n && text[i] != ',' && text[i] != '\n' && text[i] != '\r') {
          if (text[i] == '"')
            return Status::parse_error("line " + std::to_string(line) + ": a quote inside an unquoted field");
          field.push_back(text[i]);
          ++i;
        }
        if (i >= n) break;
      }
      const char c = text[i];
      if (c == ',') {
        rec.fields.push_back(std::move(field));
        field.clear();
        ++i;
        continue;
      }
      // '\n' or '\r' (CRLF; a lone CR also ends the record).
      rec.fields.push_back(std::move(field));
      field.clear();
      if (c == '\r' && i + 1 < n && text[i + 1] == '\n') ++i;
      ++i;
      ++line;
      complete = true;
      break;
    }
    if (!complete) {
      out.torn_tail = true;
      break;
    }
    out.records.push_back(std::move(rec));
    out.complete_bytes = i;
  }
  return out;
}

namespace {
// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not valid.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return 1;
  std::size_t len;
  unsigned cp;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    cp = b0 & 0x0F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    cp = b0 & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  // Overlong forms, surrogates and code points past U+10FFFF are invalid.
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return len;
}
}  // namespace

std::string sanitize_text(std::string_view text, std::size_t max_bytes) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  static constexpr std::string_view kCut = "...";
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  bool cut = false;
  while (i < text.size()) {
    std::string_view piece;
    std::size_t advance;
    const char c = text[i];
    if (c == '\r') {
      piece = "\n";
      advance = (i + 1 < text.size() && text[i + 1] == '\n') ? 2 : 1;
    } else if ((static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') || c == 0x7F) {
      ++i;
      continue;
    } else {
      std::size_t len = utf8_sequence(text, i);
      if (len == 0) {
        piece = kReplacement;
        advance = 1;
      } else {
        piece = text.substr(i, len);
        advance = len;
      }
    }
    if (max_bytes && out.size() + piece.size() > max_bytes) {
      cut = true;
      break;
    }
    out += piece;
    i += advance;
  }
  if (cut) {
    // Make room for the marker on a character boundary.
    while (!out.empty() && out.size() + kCut.size() > max_bytes) {
      std::size_t k = out.size() - 1;
      while (k > 0 && (static_cast<unsigned char>(out[k]) & 0xC0) == 0x80) --k;
      out.resize(k);
    }
    out += kCut;
  }
  return out;
}

}  // namespace tilesmith::csv
