// Feed dates: RFC 822 (RSS), RFC 3339 (Atom, JSON Feed) and the broken forms publishers
// actually send. The rule is "absent, never wrong": anything not understood fails.
#include <cstdio>
#include <cstring>

#include "feedplane/base/ascii.h"
#include "feedplane/feed/text.h"

namespace feedplane::feed {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
using base::ascii_iequals;
using base::ascii_lower;

// Days since 1970-01-01 of a proleptic Gregorian date (era-based civil calendar arithmetic).
constexpr int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }
int days_in_month(int y, int m) {
  static constexpr int d[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && leap(y) ? 29 : d[m - 1];
}

struct fields {
  int year = -1, month = -1, day = -1, hour = 0, minute = 0, second = 0;
  int offset = 0;       // seconds east of UTC
  int year_digits = 4;  // as written: only a 2-digit year is completed with a century
};

bool to_epoch(fields f, int64_t* out) {
  if (f.year < 0 || f.month < 1 || f.month > 12 || f.day < 1) return false;
  // RFC 2822 section 4.3 completes 2-digit years only: "0004" or "4" is not 2004.
  if (f.year_digits == 2) {
    f.year += f.year < 50 ? 2000 : 1900;
  } else if (f.year_digits != 4) {
    return false;
  }
  if (f.year < 1000 || f.year > 9999) return false;
  if (f.day > days_in_month(f.year, f.month)) return false;
  if (f.hour == 24 && f.minute == 0 && f.second == 0) {
    // "24:00" is the end of the day; keep it, it is unambiguous.
  } else if (f.hour > 23) {
    return false;
  }
  if (f.minute > 59 || f.second > 60) return false;
  if (f.second == 60) f.second = 59;  // leap second: stay inside the same minute
  const int64_t t =
      days_from_civil(f.year, static_cast<unsigned>(f.month), static_cast<unsigned>(f.day)) *
          86400 +
      int64_t{f.hour} * 3600 + int64_t{f.minute} * 60 + f.second - f.offset;
  // The zone can move a date past year 9999 (or before 1000) in UTC, which RFC 3339's
  // four-digit year cannot print: such a date is absent.
  constexpr int64_t lo = days_from_civil(1000, 1, 1) * 86400;
  constexpr int64_t hi = days_from_civil(10000, 1, 1) * 86400;
  if (t < lo || t >= hi) return false;
  *out = t;
  return true;
}

int month_from_name(std::string_view w) {
  static constexpr std::string_view names[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                               "jul", "aug", "sep", "oct", "nov", "dec"};
  static constexpr std::string_view full[] = {"january",   "february", "march",    "april",
                                              "may",       "june",     "july",     "august",
                                              "september", "october",  "november", "december"};
  for (int i = 0; i < 12; ++i) {
    if (ascii_iequals(w, names[i]) || ascii_iequals(w, full[i])) return i + 1;
  }
  if (ascii_iequals(w, "sept")) return 9;
  return 0;
}

bool is_day_name(std::string_view w) {
  static constexpr std::string_view names[] = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};
  static constexpr std::string_view full[] = {"monday", "tuesday",  "wednesday", "thursday",
                                              "friday", "saturday", "sunday"};
  for (int i = 0; i < 7; ++i)
    if (ascii_iequals(w, names[i]) || ascii_iequals(w, full[i])) return true;
  return ascii_iequals(w, "tues") || ascii_iequals(w, "thur") || ascii_iequals(w, "thurs") ||
         ascii_iequals(w, "weds");
}

// Zone abbreviations seen in feeds (RFC 822's plus common ones); *off in seconds.
bool zone_from_name(std::string_view w, int* off) {
  struct zone {
    std::string_view name;
    int hours_x100;
  };
  static constexpr zone zones[] = {
      {"ut", 0},      {"utc", 0},     {"gmt", 0},     {"z", 0},      {"est", -500},  {"edt", -400},
      {"cst", -600},  {"cdt", -500},  {"mst", -700},  {"mdt", -600}, {"pst", -800},  {"pdt", -700},
      {"akst", -900}, {"akdt", -800}, {"hst", -1000}, {"bst", 100},  {"ist", 530},   {"cet", 100},
      {"cest", 200},  {"met", 100},   {"mest", 200},  {"eet", 200},  {"eest", 300},  {"wet", 0},
      {"west", 100},  {"msk", 300},   {"jst", 900},   {"kst", 900},  {"hkt", 800},   {"sgt", 800},
      {"aest", 1000}, {"aedt", 1100}, {"acst", 930},  {"awst", 800}, {"nzst", 1200}, {"nzdt", 1300},
  };
  for (const auto& z : zones) {
    if (ascii_iequals(w, z.name)) {
      *off = (z.hours_x100 / 100) * 3600 + (z.hours_x100 % 100) * 60;
      return true;
    }
  }
  return false;
}

// Reads up to max digits at s[*i]; returns count read (value in *v).
int read_num(std::string_view s, size_t* i, int max, int* v) {
  int n = 0, val = 0;
  while (*i < s.size() && is_digit(s[*i]) && n < max) {
    val = val * 10 + (s[*i] - '0');
    ++*i;
    ++n;
  }
  *v = val;
  return n;
}

// "+hh:mm", "+hhmm", "+hh" at s[*i] (sign already checked).
bool read_offset(std::string_view s, size_t* i, int* off) {
  const int sign = s[*i] == '-' ? -1 : 1;
  ++*i;
  int hh = 0, mm = 0;
  const int n = read_num(s, i, 4, &hh);
  if (n == 4) {
    mm = hh % 100;
    hh /= 100;
  } else if (n == 1 || n == 2) {
    if (*i < s.size() && s[*i] == ':') {
      ++*i;
      if (read_num(s, i, 2, &mm) != 2) return false;
    }
  } else {
    return false;
  }
  if (hh > 14 || mm > 59) return false;
  *off = sign * (hh * 3600 + mm * 60);
  return true;
}

// RFC 3339 / ISO 8601: YYYY-MM-DD[(T| )hh:mm[:ss[.frac]]][Z|+hh:mm|+hhmm| UTC].
bool parse_iso(std::string_view s, int64_t* out) {
  fields f;
  size_t i = 0;
  if (read_num(s, &i, 4, &f.year) != 4 || i >= s.size() || s[i] != '-') return false;
  ++i;
  if (read_num(s, &i, 2, &f.month) < 1) return false;
  if (i < s.size() && s[i] == '-') {
    ++i;
    if (read_num(s, &i, 2, &f.day) < 1) return false;
  } else {
    f.day = 1;  // "2004-01": a month; start of it
  }
  if (i < s.size() && (s[i] == 'T' || s[i] == 't' || s[i] == ' ')) {
    ++i;
    if (read_num(s, &i, 2, &f.hour) != 2 || i >= s.size() || s[i] != ':') return false;
    ++i;
    if (read_num(s, &i, 2, &f.minute) != 2) return false;
    if (i < s.size() && s[i] == ':') {
      ++i;
      if (read_num(s, &i, 2, &f.second) != 2) return false;
      if (i < s.size() && (s[i] == '.' || s[i] == ',')) {
        ++i;
        int frac = 0;
        if (read_num(s, &i, 9, &frac) < 1) return false;
        while (i < s.size() && is_digit(s[i])) ++i;  // beyond nanoseconds: ignored
      }
    }
    while (i < s.size() && s[i] == ' ') ++i;
    if (i < s.size()) {
      if (s[i] == 'Z' || s[i] == 'z') {
        ++i;
      } else if (s[i] == '+' || s[i] == '-') {
        if (!read_offset(s, &i, &f.offset)) return false;
      } else {
        size_t j = i;
        while (j < s.size() && is_alpha(s[j])) ++j;
        if (!zone_from_name(s.substr(i, j - i), &f.offset)) return false;
        i = j;
      }
    }
  }
  if (i != s.size()) return false;
  return to_epoch(f, out);
}

// RFC 822 and relatives, read as a bag of tokens: day names skipped, one month name, one
// time, numbers placed by size, one zone. "Thu, 01 Jan 2004 19:48:21 GMT", "1 Jan 04 19:48
// +0100", "Sun Jan 4 16:29:06 PST 2004", "January 4, 2004 4:29 PM".
bool parse_tokens(std::string_view s, int64_t* out) {
  fields f;
  bool have_time = false, have_zone = false;
  int pm = -1;  // -1 none, 0 am, 1 pm
  int numbers[3];
  int num_digits[3];
  int n_numbers = 0;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == ' ' || c == ',' || c == '\t' || c == '.' || c == '\n' || c == '\r') {
      ++i;
    } else if (is_digit(c)) {
      size_t j = i;
      int v = 0;
      const int n = read_num(s, &j, 8, &v);
      if (j < s.size() && s[j] == ':') {
        if (have_time || n > 2) return false;
        f.hour = v;
        ++j;
        if (read_num(s, &j, 2, &f.minute) != 2) return false;
        if (j < s.size() && s[j] == ':') {
          ++j;
          if (read_num(s, &j, 2, &f.second) != 2) return false;
          if (j < s.size() && s[j] == '.') {  // fractional seconds
            ++j;
            while (j < s.size() && is_digit(s[j])) ++j;
          }
        }
        have_time = true;
      } else {
        if (n_numbers == 3 || n > 4) return false;
        numbers[n_numbers] = v;
        num_digits[n_numbers++] = n;
        // "1st", "2nd", "3rd", "4th"
        if (j + 1 < s.size() && is_alpha(s[j]) && is_alpha(s[j + 1]) &&
            (j + 2 >= s.size() || !is_alpha(s[j + 2]))) {
          const std::string_view sfx = s.substr(j, 2);
          if (ascii_iequals(sfx, "st") || ascii_iequals(sfx, "nd") || ascii_iequals(sfx, "rd") ||
              ascii_iequals(sfx, "th"))
            j += 2;
        }
      }
      i = j;
    } else if ((c == '+' || c == '-') && have_time && !have_zone) {
      if (!read_offset(s, &i, &f.offset)) return false;
      have_zone = true;
    } else if (is_alpha(c)) {
      size_t j = i;
      while (j < s.size() && is_alpha(s[j])) ++j;
      const std::string_view w = s.substr(i, j - i);
      int m = 0, off = 0;
      if ((m = month_from_name(w)) != 0) {
        if (f.month != -1) return false;
        f.month = m;
      } else if (is_day_name(w) || (i == 0 && j < s.size() && s[j] == ',')) {
        // A weekday: skipped. A leading "word," is one in whatever language ("mer, 16 nov").
      } else if (ascii_iequals(w, "am") || ascii_iequals(w, "pm")) {
        pm = ascii_iequals(w, "pm") ? 1 : 0;
      } else if (!have_zone && zone_from_name(w, &off)) {
        f.offset = off;
        have_zone = true;
        // "GMT+0100", "UTC-5"
        if (j < s.size() && (s[j] == '+' || s[j] == '-')) {
          i = j;
          if (!read_offset(s, &i, &off)) return false;
          f.offset += off;
          continue;
        }
      } else {
        return false;
      }
      i = j;
    } else {
      return false;
    }
  }
  if (f.month == -1 || n_numbers < 2) return false;
  // Place the numbers: a 4-digit one is the year; the other is the day. With two short
  // numbers (day, 2-digit year) RFC 822 order is day first.
  int year_idx = -1;
  for (int k = 0; k < n_numbers; ++k)
    if (num_digits[k] >= 3) {
      if (year_idx != -1) return false;
      year_idx = k;
    }
  if (year_idx == -1) {
    if (n_numbers != 2) return false;
    year_idx = 1;
  }
  int day_count = 0;
  for (int k = 0; k < n_numbers; ++k) {
    if (k == year_idx) continue;
    if (num_digits[k] > 2) return false;
    f.day = numbers[k];
    ++day_count;
  }
  if (day_count != 1) return false;
  f.year = numbers[year_idx];
  f.year_digits = num_digits[year_idx];
  if (pm != -1) {
    if (!have_time || f.hour < 1 || f.hour > 12) return false;
    if (pm == 1 && f.hour != 12) f.hour += 12;
    if (pm == 0 && f.hour == 12) f.hour = 0;
  }
  return to_epoch(f, out);
}

// The canonical RFC 1123 form most RSS feeds send, read at fixed positions:
// "[Www, ]D[D] Mmm YYYY HH:MM:SS (+hhmm|-hhmm|GMT|UTC|UT|Z)". Returns false when s is not in
// exactly that form (the general reader then decides).
bool parse_rfc1123_fast(std::string_view s, int64_t* out) {
  size_t i = 0;
  if (s.size() > 5 && is_alpha(s[0]) && s[3] == ',' && s[4] == ' ') i = 5;
  fields f;
  auto num = [&](int digits, int* v) {
    int x = 0;
    for (int k = 0; k < digits; ++k, ++i) {
      if (i >= s.size() || !is_digit(s[i])) return false;
      x = x * 10 + (s[i] - '0');
    }
    *v = x;
    return true;
  };
  auto lit = [&](char c) { return i < s.size() && s[i++] == c; };
  const int day_digits = (i + 1 < s.size() && is_digit(s[i + 1])) ? 2 : 1;
  if (!num(day_digits, &f.day) || !lit(' ') || i + 4 > s.size()) return false;
  static constexpr std::string_view months = "janfebmaraprmayjunjulaugsepoctnovdec";
  const char m3[3] = {ascii_lower(s[i]), ascii_lower(s[i + 1]), ascii_lower(s[i + 2])};
  const size_t pos = months.find(std::string_view(m3, 3));
  if (pos == std::string_view::npos || pos % 3 != 0) return false;
  f.month = static_cast<int>(pos / 3) + 1;
  i += 3;
  if (!lit(' ') || !num(4, &f.year) || !lit(' ') || !num(2, &f.hour) || !lit(':') ||
      !num(2, &f.minute) || !lit(':') || !num(2, &f.second) || !lit(' '))
    return false;
  const std::string_view z = s.substr(i);
  if (z.size() == 5 && (z[0] == '+' || z[0] == '-')) {
    size_t k = 0;
    if (!read_offset(z, &k, &f.offset) || k != 5) return false;
  } else if (!(z == "GMT" || z == "UTC" || z == "UT" || z == "Z")) {
    return false;
  }
  return to_epoch(f, out);
}

[[gnu::always_inline]] inline bool two_digits(const char* p, int* v) {
  if (!is_digit(p[0]) || !is_digit(p[1])) return false;
  *v = (p[0] - '0') * 10 + (p[1] - '0');
  return true;
}

// The exact RFC 3339 form Atom and JSON Feed send, read at fixed positions:
// "YYYY-MM-DDTHH:MM:SS[.frac](Z|+hh:mm|-hh:mm)". Returns false when s is not in exactly that
// form (parse_iso then decides). Fast because it is straight-line digit arithmetic.
bool parse_rfc3339_fast(std::string_view s, int64_t* out) {
  if (s.size() < 20) return false;
  const char* p = s.data();
  auto d2 = [p](size_t i, int* v) { return two_digits(p + i, v); };
  fields f;
  int hi = 0, lo = 0;
  if (!d2(0, &hi) || !d2(2, &lo) || p[4] != '-' || !d2(5, &f.month) || p[7] != '-' ||
      !d2(8, &f.day) || (p[10] != 'T' && p[10] != 't') || !d2(11, &f.hour) || p[13] != ':' ||
      !d2(14, &f.minute) || p[16] != ':' || !d2(17, &f.second))
    return false;
  f.year = hi * 100 + lo;
  size_t i = 19;
  if (p[i] == '.') {
    const size_t f0 = ++i;
    while (i < s.size() && is_digit(p[i])) ++i;
    if (i == f0) return false;
  }
  if (i + 1 == s.size() && (p[i] == 'Z' || p[i] == 'z')) return to_epoch(f, out);
  if (i + 6 != s.size() || (p[i] != '+' && p[i] != '-') || p[i + 3] != ':') return false;
  int oh = 0, om = 0;
  if (!d2(i + 1, &oh) || !d2(i + 4, &om) || oh > 14 || om > 59) return false;
  f.offset = (p[i] == '-' ? -1 : 1) * (oh * 3600 + om * 60);
  return to_epoch(f, out);
}

}  // namespace

bool parse_date(std::string_view text, int64_t* out) {
  const std::string_view s = base::ascii_trim(text);
  if (s.empty() || s.size() > 64) return false;
  if (s.size() >= 5 && is_digit(s[0]) && is_digit(s[1]) && is_digit(s[2]) && is_digit(s[3]) &&
      s[4] == '-')
    return parse_rfc3339_fast(s, out) || parse_iso(s, out);
  if (parse_rfc1123_fast(s, out)) return true;
  return parse_tokens(s, out);
}

int format_rfc3339(int64_t t, char* buf) {
  int64_t days = t >= 0 ? t / 86400 : -((-t + 86399) / 86400);
  int64_t secs = t - days * 86400;
  // civil_from_days: the inverse of days_from_civil.
  days += 719468;
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const auto doe = static_cast<unsigned>(days - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
  return std::snprintf(buf, 32, "%04lld-%02u-%02uT%02d:%02d:%02dZ", static_cast<long long>(y), m, d,
                       static_cast<int>(secs / 3600), static_cast<int>(secs / 60 % 60),
                       static_cast<int>(secs % 60));
}

}  // namespace feedplane::feed
