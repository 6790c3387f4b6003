// The word-boundary scan, written once with Highway; tokenize.cc compiles it for every
// x86 target through foreach_target and dispatches at run time.
// Per-target include guard (Highway's convention for *-inl.h).
#if defined(FEEDPLANE_MATCHER_TOKENIZE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef FEEDPLANE_MATCHER_TOKENIZE_INL_H_
#undef FEEDPLANE_MATCHER_TOKENIZE_INL_H_
#else
#define FEEDPLANE_MATCHER_TOKENIZE_INL_H_
#endif

#include <bit>
#include <cstring>

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace feedplane::matcher::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Writes base + the index of every set bit of t to out, lowest first; returns the count.
// Fast because it writes 8 positions per step unconditionally (out needs 8 slack
// entries past the count) instead of branching on every bit.
HWY_INLINE size_t flatten_bits(uint64_t t, uint32_t base, uint32_t* out) {
  const size_t count = static_cast<size_t>(std::popcount(t));
  for (size_t j = 0; j < count; j += 8) {
    for (size_t k = 0; k < 8; ++k) {
      out[j + k] = base + static_cast<uint32_t>(std::countr_zero(t));
      t &= t - 1;  // countr_zero(0) is 64: harmless garbage in the slack
    }
  }
  return count;
}

// Contract as detail::scan_words_simd in text.h. At most 64 lanes, so one vector's
// word mask fits a uint64_t.
HWY_INLINE size_t scan_words(const uint8_t* HWY_RESTRICT in, size_t n, uint8_t* HWY_RESTRICT lower,
                             uint32_t* HWY_RESTRICT bounds, unsigned* flags) {
  const hn::CappedTag<uint8_t, 64> d;
  const size_t lanes = hn::Lanes(d);
  const auto k_a_upper = hn::Set(d, 'A');
  const auto k_a = hn::Set(d, 'a');
  const auto k_0 = hn::Set(d, '0');
  const auto k26 = hn::Set(d, 26);
  const auto k10 = hn::Set(d, 10);
  const auto k_case = hn::Set(d, 0x20);
  const auto k_high = hn::Set(d, 0x80);
  const auto k_plus = hn::Set(d, '+');
  const auto zero = hn::Zero(d);

  size_t count = 0;
  uint64_t carry = 0;     // 1 if the byte before this vector was a word byte
  auto seen_high = zero;  // OR of every byte: bit 7 set if any byte was >= 0x80
  auto seen_plus = zero;  // OR of the '+' lane masks
  uint8_t mask_bytes[8] = {};

  auto step = [&](hn::Vec<decltype(d)> v, size_t i, uint8_t* HWY_RESTRICT dst) HWY_ATTR {
    const auto upper = hn::Lt(hn::Sub(v, k_a_upper), k26);
    const auto low = hn::IfThenElse(upper, hn::Or(v, k_case), v);
    const auto alpha = hn::Lt(hn::Sub(low, k_a), k26);
    const auto digit = hn::Lt(hn::Sub(v, k_0), k10);
    const auto high = hn::Ne(hn::And(v, k_high), zero);
    const auto word = hn::Or(hn::Or(alpha, digit), high);
    seen_high = hn::Or(seen_high, v);
    seen_plus = hn::Or(seen_plus, hn::VecFromMask(d, hn::Eq(v, k_plus)));
    hn::StoreU(low, d, dst);
    hn::StoreMaskBits(d, word, mask_bytes);
    uint64_t bits;
    std::memcpy(&bits, mask_bytes, sizeof bits);
    const uint64_t lane_mask = lanes < 64 ? (uint64_t{1} << lanes) - 1 : ~uint64_t{0};
    bits &= lane_mask;
    // A transition is a begin (word after non-word) or an end (non-word after word).
    const uint64_t t = (bits ^ ((bits << 1) | carry)) & lane_mask;
    carry = bits >> (lanes - 1);
    count += flatten_bits(t, static_cast<uint32_t>(i), bounds + count);
  };

  size_t i = 0;
  for (; i + lanes <= n; i += lanes) step(hn::LoadU(d, in + i), i, lower + i);
  if (i < n) {
    // Tail: a zero-padded copy; zero bytes are not word bytes, so no run leaks past n.
    HWY_ALIGN uint8_t tail_in[64] = {};
    HWY_ALIGN uint8_t tail_out[64];
    std::memcpy(tail_in, in + i, n - i);
    step(hn::Load(d, tail_in), i, tail_out);
    std::memcpy(lower + i, tail_out, n - i);
  }
  if (carry) bounds[count++] = static_cast<uint32_t>(n);
  const bool any_high = !hn::AllFalse(d, hn::Ne(hn::And(seen_high, k_high), zero));
  const bool any_plus = !hn::AllFalse(d, hn::Ne(seen_plus, zero));
  *flags = (any_high ? 1u : 0u) | (any_plus ? 2u : 0u);
  return count;
}

}  // namespace feedplane::matcher::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
