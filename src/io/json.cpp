#include "io/json.hpp"

#include <unordered_set>

#include "xylem/error.hpp"

namespace xylem::io {

namespace {

// The two-character escapes, both ways: what the reader accepts and what
// the writer writes. The writer uses them as serde_json and Python's json
// do, so a header written here matches theirs byte for byte.
struct ShortEscape {
  char letter;     // after the backslash
  char character;  // what it stands for
};
constexpr ShortEscape kShortEscapes[] = {{'"', '"'},  {'\\', '\\'}, {'b', '\b'}, {'f', '\f'},
                                         {'n', '\n'}, {'r', '\r'},  {'t', '\t'}};

const ShortEscape* find_escape(char ShortEscape::*field, char c) {
  for (const ShortEscape& e : kShortEscapes)
    if (e.*field == c) return &e;
  return nullptr;
}

// Deep enough for any header the format defines (three levels); the limit
// keeps a hostile file from exhausting the stack.
constexpr int kMaxDepth = 32;

class Parser {
 public:
  Parser(std::string_view text, const std::string& source, std::size_t base)
      : text_(text), source_(source), base_(base) {}

  Json document() {
    Json value = parse_value(0);
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the value");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }
  [[noreturn]] void fail_at(std::size_t pos, const std::string& what) const {
    throw Error(ErrorCode::invalid_argument,
                source_ + ": bad JSON at byte " + std::to_string(base_ + pos) + ": " + what);
  }

  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  char peek() {
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end");
    return text_[pos_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }

  Json parse_value(int depth) {
    if (depth > kMaxDepth) fail("nested deeper than " + std::to_string(kMaxDepth) + " levels");
    const char c = peek();
    Json value;
    value.offset = base_ + pos_;
    if (c == '{') {
      value.kind = Json::Kind::object;
      parse_object(value, depth);
    } else if (c == '[') {
      value.kind = Json::Kind::array;
      parse_array(value, depth);
    } else if (c == '"') {
      value.kind = Json::Kind::string;
      value.text = parse_string();
    } else if (c >= '0' && c <= '9') {
      value.kind = Json::Kind::integer;
      value.integer = parse_integer();
    } else {
      fail(c == '-' ? "a negative number (only non-negative integers are allowed here)"
                    : "expected an object, array, string or non-negative integer");
    }
    return value;
  }

  void parse_object(Json& value, int depth) {
    std::unordered_set<std::string> keys;
    ++pos_;
    if (peek() == '}') {
      ++pos_;
      return;
    }
    for (;;) {
      if (peek() != '"') fail("expected a key string");
      const std::size_t key_pos = pos_;
      std::string key = parse_string();
      if (!keys.insert(key).second) fail_at(key_pos, "key " + json_quote(key) + " appears twice");
      expect(':');
      Json member = parse_value(depth + 1);
      value.members.push_back(JsonMember{std::move(key), std::move(member)});
      if (peek() == '}') break;
      expect(',');
    }
    ++pos_;
  }

  void parse_array(Json& value, int depth) {
    ++pos_;
    if (peek() == ']') {
      ++pos_;
      return;
    }
    for (;;) {
      value.items.push_back(parse_value(depth + 1));
      if (peek() == ']') break;
      expect(',');
    }
    ++pos_;
  }

  std::uint64_t parse_integer() {
    const std::size_t start = pos_;
    std::uint64_t v = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const auto digit = static_cast<std::uint64_t>(text_[pos_] - '0');
      if (v > (UINT64_MAX - digit) / 10) fail_at(start, "integer does not fit in 64 bits");
      v = v * 10 + digit;
      ++pos_;
    }
    if (pos_ - start > 1 && text_[start] == '0') fail_at(start, "integer with a leading zero");
    if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E'))
      fail_at(start, "a fraction or exponent (only integers are allowed here)");
    return v;
  }

  unsigned hex4() {
    if (text_.size() - pos_ < 4) fail("truncated \\u escape");
    unsigned v = 0;
    for (int k = 0; k < 4; ++k, ++pos_) {
      const char h = text_[pos_];
      v <<= 4;
      if (h >= '0' && h <= '9')
        v |= unsigned(h - '0');
      else if (h >= 'a' && h <= 'f')
        v |= unsigned(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        v |= unsigned(h - 'A' + 10);
      else
        fail("bad hex digit in a \\u escape");
    }
    return v;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }

  // A \u escape, with a surrogate pair joined into one code point.
  unsigned code_point() {
    const unsigned high = hex4();
    if (high >= 0xDC00 && high <= 0xDFFF) fail("a lone low surrogate in a \\u escape");
    if (high < 0xD800 || high > 0xDBFF) return high;
    if (text_.substr(pos_, 2) != "\\u") fail("a high surrogate without its low half");
    pos_ += 2;
    const unsigned low = hex4();
    if (low < 0xDC00 || low > 0xDFFF) fail("a high surrogate without its low half");
    return 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
  }

  std::string parse_string() {
    ++pos_;
    std::string out;
    for (;;) {
      if (pos_ >= text_.size()) fail("unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail_at(pos_ - 1, "an unescaped control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) fail("unterminated string");
      const char e = text_[pos_++];
      if (e == 'u') {
        append_utf8(out, code_point());
      } else if (e == '/') {
        out += '/';
      } else if (const ShortEscape* found = find_escape(&ShortEscape::letter, e)) {
        out += found->character;
      } else {
        fail_at(pos_ - 1, "unknown escape");
      }
    }
  }

  std::string_view text_;
  const std::string& source_;
  std::size_t base_;
  std::size_t pos_ = 0;
};

}  // namespace

Json parse_json(std::string_view text, const std::string& source, std::size_t base) {
  return Parser(text, source, base).document();
}

std::string json_quote(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (const ShortEscape* found = find_escape(&ShortEscape::character, c)) {
      out += '\\';
      out += found->letter;
    } else if (u < 0x20) {
      out += "\\u00";
      out += kHex[u >> 4];
      out += kHex[u & 0xF];
    } else {
      out += c;
    }
  }
  return out + '"';
}

const char* json_kind_name(Json::Kind kind) noexcept {
  switch (kind) {
    case Json::Kind::object:
      return "an object";
    case Json::Kind::array:
      return "an array";
    case Json::Kind::string:
      return "a string";
    case Json::Kind::integer:
      return "an integer";
  }
  return "a value";
}

}  // namespace xylem::io
