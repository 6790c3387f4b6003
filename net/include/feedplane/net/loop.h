// feedplane::net::loop: one io_uring per shard thread (SINGLE_ISSUER | DEFER_TASKRUN).
//
// How to run an operation and get its completion
// ------------------------------------------------
// 1. Make a `handler`: a plain function pointer, a context pointer and a 64-bit tag,
//        handler h = bind<&connection::on_recv>(this, /*tag=*/7);
//    The handler is copied into a slot of the loop's preallocated slab; the SQE's
//    user_data packs (kind, slot index, generation). Nothing is heap-allocated per I/O.
// 2. Call an operation on the loop thread: loop.send(fd, buf, len, h), loop.recv(...),
//    loop.recv_multishot(fd, h), loop.accept_multishot(fd, h), loop.connect(...).
//    It returns an op_id (invalid only when the slab is full: treat as -ENOMEM).
//    SQEs are queued and submitted once per loop turn, together with the wait.
// 3. The loop reaps completions in batches and calls h.fn(h.ctx, completion) for each.
//    completion::res is cqe->res untouched: >= 0 is the op's result, < 0 is -errno. The
//    handler is the one place that classifies it (-ENOBUFS on a multishot recv means
//    "re-arm", -ECANCELED means the op was cancelled, ...). completion::more() is true
//    while a multishot op stays armed; the slot is freed after the last completion.
// 4. Receives with provided buffers (recv_multishot, recv_provided) deliver
//    completion::data, a view into the loop's buffer ring that is valid ONLY during the
//    callback: the loop recycles the buffer when the callback returns, so 10,000 open
//    connections cost buffer memory only while data is in flight. Copy what you keep.
// 5. Buffers passed to send/recv/connect belong to the caller until the final
//    completion arrives. An object that owns an op must outlive it: cancel(op) and wait
//    for the completion (it arrives with -ECANCELED or its natural result) before freeing.
//
// Timers: a `timer` is intrusive (owned by the caller, no allocation), armed with
// loop.arm(t, ms) and disarmed with loop.disarm(t); the loop keeps them in a hashed wheel
// of 1 ms ticks and bounds its wait by the next non-empty slot. Timers that are due in the
// same turn fire in deadline order (ties in the order they were armed).
//
// Cross-shard wake: src.wake(dst) (called on src's thread) makes dst run its wake
// handler (set_wake_handler) soon; wakes may coalesce. It uses IORING_OP_MSG_RING when the
// kernel has it and dst's eventfd otherwise. request_stop() and wake_from_any_thread()
// may be called from any thread (eventfd).
//
// A TLS client fits on top: recv(fd, buf, len) or recv_multishot into a memory BIO,
// SSL_read/SSL_write on the BIOs, send() the write BIO's bytes; timers bound the handshake.
//
// Threading: a loop must be created, run and used on one thread (the shard's); only
// wake_from_any_thread(), request_stop() and ring_fd() may be used from others.
#pragma once

#include <liburing.h>
#include <pthread.h>
#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace feedplane::net {

// One completion as the handler sees it.
struct completion {
  int32_t res = 0;                  // cqe->res: >= 0 result, < 0 -errno (classified by the handler)
  uint32_t flags = 0;               // cqe->flags
  uint64_t tag = 0;                 // the tag given with the handler
  std::span<const std::byte> data;  // provided-buffer bytes (valid during the callback only)

  bool more() const { return (flags & IORING_CQE_F_MORE) != 0; }
};

using op_fn = void (*)(void* ctx, const completion& c);

struct handler {
  op_fn fn = nullptr;
  void* ctx = nullptr;
  uint64_t tag = 0;
};

// bind<&T::method>(obj, tag): a handler calling obj->method(const completion&).
template <auto Method, class T>
handler bind(T* obj, uint64_t tag = 0) {
  return handler{[](void* ctx, const completion& c) { (static_cast<T*>(ctx)->*Method)(c); }, obj,
                 tag};
}

// Identifies a submitted operation (for cancel). Value 0 is "no op".
struct op_id {
  uint64_t value = 0;
  bool valid() const { return value != 0; }
};

struct loop_options {
  uint32_t ring_entries = 1024;  // SQ size; CQ is twice as large
  uint32_t max_ops = 1u << 20;   // slab capacity (grows in chunks of 4096 up to this)
  uint32_t buffer_count = 1024;  // provided receive buffers, power of two (64 posted at
                                 // first, more when a turn's receives need them: loop.cc)
  uint32_t buffer_size = 8192;   // bytes per provided buffer
  // A waiting turn sleeps until `wait_batch` completions are ready, or `min_wait_us` has
  // passed and at least one is (the kernel's min-wait, 6.12+): fewer sleeps and wake-ups per
  // completion under load, at most min_wait_us more latency. 0 = wake for the first
  // completion. Ignored where the kernel lacks IORING_FEAT_MIN_TIMEOUT.
  uint32_t wait_batch = 0;
  uint32_t min_wait_us = 0;
};

class loop;

// An intrusive one-shot timer. Owned by the caller; must be disarmed (or have fired)
// before it is destroyed or moved. Re-arming an armed timer moves its deadline.
class timer {
 public:
  using fn_t = void (*)(void* ctx);
  timer() = default;
  timer(fn_t fn, void* ctx) : fn_(fn), ctx_(ctx) {}
  timer(const timer&) = delete;
  timer& operator=(const timer&) = delete;
  ~timer();
  void set(fn_t fn, void* ctx) {
    fn_ = fn;
    ctx_ = ctx;
  }
  bool armed() const { return prev_ != nullptr; }
  uint64_t deadline_ms() const { return deadline_; }

 private:
  friend class loop;
  timer* next_ = nullptr;  // wheel slot list links, written only by the owning loop
  timer* prev_ = nullptr;
  uint64_t deadline_ = 0;  // loop::now_ms() tick at which it fires
  fn_t fn_ = nullptr;
  void* ctx_ = nullptr;
  loop* owner_ = nullptr;
};

// Counters, read on the loop thread (or after it stopped).
struct loop_stats {
  uint64_t submitted = 0;       // SQEs handed to the kernel
  uint64_t completions = 0;     // CQEs reaped
  uint64_t waits = 0;           // io_uring_enter calls that waited
  uint64_t enobufs = 0;         // provided-buffer receives that found the ring empty
  uint32_t buffers_posted = 0;  // provided buffers handed to the kernel so far (see loop.cc)
  uint64_t stale = 0;           // CQEs whose slot generation did not match (a bug if > 0)
  uint64_t wakes = 0;           // wake handler invocations
};

// The opcodes the loop needs; start-up fails naming the first one the kernel lacks.
// Returns "" when all are present, else e.g. "io_uring opcode IORING_OP_SEND is not
// supported by this kernel". IORING_OP_MSG_RING is optional (eventfd fallback).
std::string check_required_opcodes(const io_uring_probe* probe);

class loop {
 public:
  // Creates the ring on the calling thread. On failure returns null and sets *error.
  static std::unique_ptr<loop> create(const loop_options& opt, std::string* error);
  ~loop();
  loop(const loop&) = delete;
  loop& operator=(const loop&) = delete;

  // ---- operations (loop thread only) ----
  // Multishot accept: res = new fd per completion (SOCK_NONBLOCK | SOCK_CLOEXEC).
  op_id accept_multishot(int listen_fd, handler h);
  // addr must stay valid until the completion. res = 0 on success.
  op_id connect(int fd, const sockaddr* addr, socklen_t len, handler h);
  // res = bytes sent (may be short). MSG_NOSIGNAL is always added.
  op_id send(int fd, const void* buf, size_t len, handler h, int flags = 0);
  // Scatter send; msg (and what it points to) must stay valid until the completion.
  op_id sendmsg(int fd, const msghdr* msg, handler h, int flags = 0);
  // Receive into the caller's buffer. res = bytes, 0 = peer closed.
  op_id recv(int fd, void* buf, size_t len, handler h);
  // Receive with a provided buffer: completion::data holds the bytes.
  op_id recv_provided(int fd, handler h);
  // Multishot receive with provided buffers: one completion per chunk while more().
  // Ends with res = 0 (peer closed), -ENOBUFS (re-arm), -ECANCELED or another -errno.
  op_id recv_multishot(int fd, handler h);
  // One-shot readiness poll (POLLIN/POLLOUT...): res = revents mask or -errno.
  op_id poll_add(int fd, uint32_t poll_mask, handler h);
  // Asks the kernel to cancel `op`; its handler still gets a final completion.
  void cancel(op_id op);
  // Cancels every op on `fd`.
  void cancel_fd(int fd);

  // ---- timers (loop thread only) ----
  void arm(timer& t, uint64_t delay_ms);
  void disarm(timer& t);
  // Monotonic milliseconds, cached once per loop turn.
  uint64_t now_ms() const { return now_ms_; }
  uint64_t refresh_now();

  // ---- cross-shard wake ----
  void set_wake_handler(void (*fn)(void* ctx), void* ctx) {
    wake_fn_ = fn;
    wake_ctx_ = ctx;
  }
  // Called on THIS loop's thread: wakes `target` (another loop).
  void wake(loop& target);
  // Any thread: wakes this loop through its eventfd.
  void wake_from_any_thread();
  bool has_msg_ring() const { return has_msg_ring_; }
  // loop_options' wait_batch and min_wait_us are in force (asked for, and the kernel has
  // IORING_FEAT_MIN_TIMEOUT).
  bool batches_waits() const { return wait_batch_ > 0; }
  // For tests: force the eventfd path even if MSG_RING exists.
  void disable_msg_ring() { has_msg_ring_ = false; }

  // ---- the turn hook ----
  // fn(ctx) runs once per turn: after the due timers fired (and after the completions of
  // the previous turn), before the wait. It flushes what the turn staged (a shard's ring
  // batches, a timer's included) before the thread sleeps. It returns true when it left
  // work pending: that turn then polls instead of blocking.
  void set_turn_hook(bool (*fn)(void* ctx), void* ctx) {
    hook_fn_ = fn;
    hook_ctx_ = ctx;
  }

  // ---- running ----
  // Runs until stop() or request_stop(). Returns 0, or -errno on a fatal ring error.
  int run();
  // One turn: submit, wait (if `wait`) until at least one completion or the next timer,
  // reap all completions, fire due timers. Returns completions handled or -errno.
  int run_once(bool wait);
  void stop() { stopping_.store(true, std::memory_order_relaxed); }
  void request_stop();  // any thread
  bool stopping() const { return stopping_.load(std::memory_order_relaxed); }

  const loop_stats& stats() const { return stats_; }
  int ring_fd() const { return ring_.ring_fd; }
  uint32_t buffer_size() const { return buf_size_; }
  uint32_t ops_in_flight() const { return ops_in_flight_; }

 private:
  struct slot {
    handler h;
    uint32_t gen = 0;  // bumped on every free; user_data carries it
    uint32_t next_free = 0;
  };
  static constexpr uint32_t chunk_bits = 12;
  static constexpr uint32_t wheel_slots = 1024;  // power of two, 1 ms per slot

  loop() = default;
  int init(const loop_options& opt, std::string* error);
  io_uring_sqe* get_sqe();
  uint64_t alloc_slot(const handler& h);
  void free_slot(uint32_t index);
  template <class Prep>
  op_id start(const handler& h, Prep&& prep);
  slot& slot_at(uint32_t index) {
    return chunks_[index >> chunk_bits][index & ((1u << chunk_bits) - 1)];
  }
  void dispatch(uint64_t user_data, int32_t res, uint32_t flags);
  void recycle_buffer(uint16_t bid);
  void arm_eventfd_read();
  void expire_timers();
  int64_t next_timer_wait_ms();
  int enter_min_wait(int64_t timer_ms);
  void unlink(timer& t);
  void check_owner() const;  // debug builds: abort if called off the owning thread

  io_uring ring_{};
  pthread_t owner_{};  // the thread that created the ring (the only one that may submit)
  bool ring_ok_ = false;
  bool has_msg_ring_ = false;
  bool ring_registered_ = false;
  uint32_t wait_batch_ = 0;  // 0: min-wait off (loop_options)
  uint32_t min_wait_us_ = 0;
  std::atomic<bool> stopping_{false};

  // Slab of op slots: chunks never move, so slot references stay valid while it grows.
  std::vector<std::unique_ptr<slot[]>> chunks_;
  uint32_t free_head_ = UINT32_MAX;
  uint32_t slots_total_ = 0;
  uint32_t max_ops_ = 0;
  uint32_t ops_in_flight_ = 0;

  // Provided buffer ring (group 0): buf_ring_ is shared with the kernel (it consumes
  // entries, we add them back and publish with a release store of the tail in
  // io_uring_buf_ring_advance, once per reaped batch).
  io_uring_buf_ring* buf_ring_ = nullptr;
  size_t buf_ring_bytes_ = 0;
  std::byte* buf_base_ = nullptr;
  size_t buf_bytes_ = 0;
  uint32_t buf_count_ = 0;
  uint32_t buf_size_ = 0;
  int buf_recycled_ = 0;  // added since the last advance
  // Buffers 0..buf_posted_-1 are in use (in the ring or held by a handler); the rest wait
  // until a receive finds the ring empty (post_more_buffers).
  uint32_t buf_posted_ = 0;
  void post_more_buffers();

  // Wake-up: eventfd read armed permanently; MSG_RING completions arrive tagged.
  int event_fd_ = -1;
  uint64_t event_value_ = 0;  // read target of the armed eventfd read
  bool eventfd_armed_ = false;
  void (*wake_fn_)(void*) = nullptr;
  void* wake_ctx_ = nullptr;
  bool (*hook_fn_)(void*) = nullptr;
  void* hook_ctx_ = nullptr;

  // Timer wheel: wheel_[i] is the sentinel of a circular list of timers whose deadline
  // tick % wheel_slots == i.
  std::unique_ptr<timer[]> wheel_;
  uint64_t now_ms_ = 0;
  uint64_t last_tick_ = 0;  // every tick <= last_tick_ has been expired
  // A tick at or before the earliest armed deadline (the wait ends there); UINT64_MAX:
  // unknown, the next wait rescans the wheel.
  uint64_t next_hint_ = UINT64_MAX;
  uint32_t timers_armed_ = 0;

  loop_stats stats_;
};

}  // namespace feedplane::net
