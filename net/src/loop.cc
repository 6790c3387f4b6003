#include "feedplane/net/loop.h"

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <pthread.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace feedplane::net {

namespace {

// user_data layout: kind (8 bits) | generation (24 bits) | slot index (32 bits).
enum kind : uint64_t {
  k_user = 1,      // an op in the slab
  k_wake = 2,      // MSG_RING arrival from another loop
  k_eventfd = 3,   // our eventfd read completed
  k_msg_send = 4,  // a failed MSG_RING we sent (success CQEs are skipped); low bits: target eventfd
  k_ignore = 5,    // cancel requests and other fire-and-forget SQEs
};
// Provided buffers posted at start (loop.cc's ring set-up says why not all of them).
constexpr uint32_t initial_posted_buffers = 64;
constexpr uint64_t pack(uint64_t k, uint32_t gen, uint32_t index) {
  return (k << 56) | (uint64_t(gen & 0xffffffu) << 32) | index;
}

struct opcode_name {
  int op;
  const char* name;
};
constexpr opcode_name required_ops[] = {
    {IORING_OP_ACCEPT, "IORING_OP_ACCEPT"},
    {IORING_OP_CONNECT, "IORING_OP_CONNECT"},
    {IORING_OP_SEND, "IORING_OP_SEND"},
    {IORING_OP_SENDMSG, "IORING_OP_SENDMSG"},
    {IORING_OP_RECV, "IORING_OP_RECV"},
    {IORING_OP_READ, "IORING_OP_READ"},
    {IORING_OP_ASYNC_CANCEL, "IORING_OP_ASYNC_CANCEL"},
    {IORING_OP_POLL_ADD, "IORING_OP_POLL_ADD"},
};

}  // namespace

std::string check_required_opcodes(const io_uring_probe* probe) {
  if (probe == nullptr) return "io_uring opcode probe failed (IORING_REGISTER_PROBE)";
  for (const auto& o : required_ops) {
    if (!io_uring_opcode_supported(probe, o.op)) {
      return std::string("io_uring opcode ") + o.name + " is not supported by this kernel";
    }
  }
  return {};
}

timer::~timer() {
  if (armed() && owner_ != nullptr) owner_->disarm(*this);
}

std::unique_ptr<loop> loop::create(const loop_options& opt, std::string* error) {
  std::unique_ptr<loop> l(new loop());
  if (l->init(opt, error) != 0) return nullptr;
  return l;
}

int loop::init(const loop_options& opt, std::string* error) {
  owner_ = pthread_self();
  io_uring_params p{};
  p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SUBMIT_ALL;
  int r = io_uring_queue_init_params(opt.ring_entries, &ring_, &p);
  if (r < 0) {
    *error = std::string("io_uring_setup(SINGLE_ISSUER|DEFER_TASKRUN) failed: ") + strerror(-r);
    return r;
  }
  ring_ok_ = true;
  // Registered ring fd: io_uring_enter skips the fd table lookup on every turn. Optional.
  ring_registered_ = io_uring_register_ring_fd(&ring_) == 1;
  if (!(p.features & IORING_FEAT_EXT_ARG)) {
    *error = "io_uring feature IORING_FEAT_EXT_ARG (timed waits) is not supported by this kernel";
    return -EOPNOTSUPP;
  }
  // IORING_FEAT_MIN_TIMEOUT (kernel 6.12); Debian's liburing 2.3 predates the name.
  constexpr uint32_t feat_min_timeout = 1u << 15;
  if (opt.wait_batch > 1 && opt.min_wait_us > 0 && (p.features & feat_min_timeout)) {
    wait_batch_ = opt.wait_batch;
    min_wait_us_ = opt.min_wait_us;
  }
  io_uring_probe* probe = io_uring_get_probe_ring(&ring_);
  *error = check_required_opcodes(probe);
  has_msg_ring_ = probe != nullptr && io_uring_opcode_supported(probe, IORING_OP_MSG_RING);
  if (probe != nullptr) io_uring_free_probe(probe);
  if (!error->empty()) return -EOPNOTSUPP;

  // Provided buffer ring, group 0.
  buf_count_ = 1;
  while (buf_count_ < opt.buffer_count && buf_count_ < 32768) buf_count_ <<= 1;
  buf_size_ = opt.buffer_size;
  buf_ring_bytes_ = sizeof(io_uring_buf) * buf_count_;
  void* ringmem =
      mmap(nullptr, buf_ring_bytes_, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
  buf_bytes_ = size_t(buf_count_) * buf_size_;
  // Populated up front: the buffer memory is a fixed per-shard cost paid at start-up, not
  // something that creeps up with the number of connections.
  void* bufmem = mmap(nullptr, buf_bytes_, PROT_READ | PROT_WRITE,
                      MAP_ANONYMOUS | MAP_PRIVATE | MAP_POPULATE, -1, 0);
  if (ringmem == MAP_FAILED || bufmem == MAP_FAILED) {
    if (ringmem != MAP_FAILED) munmap(ringmem, buf_ring_bytes_);
    if (bufmem != MAP_FAILED) munmap(bufmem, buf_bytes_);
    *error = "cannot map provided buffers";
    return -ENOMEM;
  }
  buf_ring_ = static_cast<io_uring_buf_ring*>(ringmem);
  buf_base_ = static_cast<std::byte*>(bufmem);
  io_uring_buf_reg reg{};
  reg.ring_addr = reinterpret_cast<uint64_t>(buf_ring_);
  reg.ring_entries = buf_count_;
  reg.bgid = 0;
  r = io_uring_register_buf_ring(&ring_, &reg, 0);
  if (r < 0) {
    *error = std::string("io_uring provided buffer ring registration failed: ") + strerror(-r);
    return r;
  }
  io_uring_buf_ring_init(buf_ring_);
  // The ring is a queue: the kernel takes from its head, a recycled buffer goes to its tail,
  // so a receive writes into the buffer used `posted` receives ago. With all 1024 posted
  // (16 MiB of 16 KiB buffers) that memory is never in the cache or the TLB: the kernel's copy
  // into it was 10.7-12.6% of the HTTP client's CPU on 8 KB bodies, 7.4-9.6% with 64 posted
  // (perf of bench/http_client_bench on a Xeon). So only a few are posted, and more (doubling) when
  // a receive finds the ring empty: the posted set settles at the largest number of receives one
  // turn completes.
  buf_posted_ = std::min<uint32_t>(buf_count_, initial_posted_buffers);
  for (uint32_t i = 0; i < buf_posted_; ++i) {
    io_uring_buf_ring_add(buf_ring_, buf_base_ + size_t(i) * buf_size_, buf_size_, uint16_t(i),
                          io_uring_buf_ring_mask(buf_count_), int(i));
  }
  io_uring_buf_ring_advance(buf_ring_, int(buf_posted_));
  stats_.buffers_posted = buf_posted_;

  max_ops_ = opt.max_ops == 0 ? 1 : opt.max_ops;

  // A blocking eventfd: io_uring polls it, so the read completes when it is written.
  event_fd_ = eventfd(0, EFD_CLOEXEC);
  if (event_fd_ < 0) {
    *error = std::string("eventfd failed: ") + strerror(errno);
    return -errno;
  }
  arm_eventfd_read();

  wheel_ = std::make_unique<timer[]>(wheel_slots);
  for (uint32_t i = 0; i < wheel_slots; ++i) wheel_[i].next_ = wheel_[i].prev_ = &wheel_[i];
  last_tick_ = refresh_now();
  return 0;
}

void loop::check_owner() const {
#ifndef NDEBUG
  // Shard-owned: a submission from another thread would break SINGLE_ISSUER (the kernel
  // answers -EEXIST) and race on the SQ. Debug builds stop at the first such call.
  if (!pthread_equal(owner_, pthread_self())) {
    fprintf(stderr, "feedplane::net::loop used from a thread that does not own it\n");
    abort();
  }
#endif
}

loop::~loop() {
  if (ring_ok_) io_uring_queue_exit(&ring_);  // cancels whatever is still in flight
  if (buf_ring_ != nullptr) munmap(buf_ring_, buf_ring_bytes_);
  if (buf_base_ != nullptr) munmap(buf_base_, buf_bytes_);
  if (event_fd_ >= 0) close(event_fd_);
  if (wheel_) {
    // Timers still armed belong to callers; detach them so their destructors do nothing.
    for (uint32_t i = 0; i < wheel_slots; ++i) {
      timer* s = &wheel_[i];
      for (timer* t = s->next_; t != s;) {
        timer* n = t->next_;
        t->next_ = t->prev_ = nullptr;
        t->owner_ = nullptr;
        t = n;
      }
      s->next_ = s->prev_ = nullptr;
    }
  }
}

uint64_t loop::refresh_now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  now_ms_ = uint64_t(ts.tv_sec) * 1000 + uint64_t(ts.tv_nsec) / 1'000'000;
  return now_ms_;
}

io_uring_sqe* loop::get_sqe() {
  check_owner();
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) {
    // SQ full: hand what we have to the kernel now (no wait) and take a fresh entry.
    int n = io_uring_submit(&ring_);
    if (n > 0) stats_.submitted += uint64_t(n);
    sqe = io_uring_get_sqe(&ring_);
  }
  return sqe;
}

uint64_t loop::alloc_slot(const handler& h) {
  if (free_head_ == UINT32_MAX) {
    if (slots_total_ >= max_ops_) return 0;
    // Growth happens a chunk at a time and chunks are never freed: steady state allocates
    // nothing.
    const uint32_t base = slots_total_;
    const uint32_t n = 1u << chunk_bits;
    chunks_.push_back(std::make_unique<slot[]>(n));
    slot* c = chunks_.back().get();
    const uint32_t usable = std::min(n, max_ops_ - base);
    for (uint32_t i = 0; i < usable; ++i) {
      c[i].next_free = i + 1 < usable ? base + i + 1 : UINT32_MAX;
    }
    free_head_ = base;
    slots_total_ = base + usable;
  }
  const uint32_t idx = free_head_;
  slot& s = slot_at(idx);
  free_head_ = s.next_free;
  s.h = h;
  ++ops_in_flight_;
  return pack(k_user, s.gen, idx);
}

template <class Prep>
op_id loop::start(const handler& h, Prep&& prep) {
  const uint64_t ud = alloc_slot(h);
  if (ud == 0) return op_id{};
  io_uring_sqe* sqe = get_sqe();
  if (sqe == nullptr) {
    free_slot(uint32_t(ud));
    return op_id{};
  }
  prep(sqe);
  io_uring_sqe_set_data64(sqe, ud);
  return op_id{ud};
}

op_id loop::accept_multishot(int listen_fd, handler h) {
  return start(h, [&](io_uring_sqe* q) {
    io_uring_prep_multishot_accept(q, listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  });
}

op_id loop::connect(int fd, const sockaddr* addr, socklen_t len, handler h) {
  return start(h, [&](io_uring_sqe* q) { io_uring_prep_connect(q, fd, addr, len); });
}

op_id loop::send(int fd, const void* buf, size_t len, handler h, int flags) {
  return start(h,
               [&](io_uring_sqe* q) { io_uring_prep_send(q, fd, buf, len, flags | MSG_NOSIGNAL); });
}

op_id loop::sendmsg(int fd, const msghdr* msg, handler h, int flags) {
  return start(h, [&](io_uring_sqe* q) {
    io_uring_prep_sendmsg(q, fd, msg, unsigned(flags | MSG_NOSIGNAL));
  });
}

op_id loop::recv(int fd, void* buf, size_t len, handler h) {
  return start(h, [&](io_uring_sqe* q) { io_uring_prep_recv(q, fd, buf, len, 0); });
}

op_id loop::recv_provided(int fd, handler h) {
  return start(h, [&](io_uring_sqe* q) {
    {
      io_uring_prep_recv(q, fd, nullptr, buf_size_, 0);
      q->flags |= IOSQE_BUFFER_SELECT;
      q->buf_group = 0;
    };
  });
}

op_id loop::recv_multishot(int fd, handler h) {
  return start(h, [&](io_uring_sqe* q) {
    {
      io_uring_prep_recv_multishot(q, fd, nullptr, 0, 0);
      q->flags |= IOSQE_BUFFER_SELECT;
      q->buf_group = 0;
    };
  });
}

op_id loop::poll_add(int fd, uint32_t poll_mask, handler h) {
  return start(h, [&](io_uring_sqe* q) { io_uring_prep_poll_add(q, fd, poll_mask); });
}

void loop::free_slot(uint32_t idx) {
  slot& s = slot_at(idx);
  ++s.gen;  // a late CQE or cancel carrying the old generation no longer matches
  s.h = {};
  s.next_free = free_head_;
  free_head_ = idx;
  --ops_in_flight_;
}

void loop::cancel(op_id op) {
  if (!op.valid()) return;
  io_uring_sqe* sqe = get_sqe();
  if (sqe == nullptr) return;
  io_uring_prep_cancel64(sqe, op.value, 0);
  io_uring_sqe_set_data64(sqe, pack(k_ignore, 0, 0));
}

void loop::cancel_fd(int fd) {
  io_uring_sqe* sqe = get_sqe();
  if (sqe == nullptr) return;
  io_uring_prep_cancel_fd(sqe, fd, IORING_ASYNC_CANCEL_ALL);
  io_uring_sqe_set_data64(sqe, pack(k_ignore, 0, 0));
}

void loop::arm_eventfd_read() {
  io_uring_sqe* sqe = get_sqe();
  if (sqe == nullptr) return;  // retried at the end of the next turn
  io_uring_prep_read(sqe, event_fd_, &event_value_, sizeof(event_value_), 0);
  io_uring_sqe_set_data64(sqe, pack(k_eventfd, 0, 0));
  eventfd_armed_ = true;
}

void loop::wake(loop& target) {
  if (has_msg_ring_ && target.has_msg_ring_) {
    io_uring_sqe* sqe = get_sqe();
    if (sqe != nullptr) {
      // Posts a CQE with user_data k_wake on the target ring; sent with this turn's submit.
      io_uring_prep_msg_ring(sqe, target.ring_fd(), 0, pack(k_wake, 0, 0), 0);
      sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
      io_uring_sqe_set_data64(sqe, pack(k_msg_send, 0, uint32_t(target.event_fd_)));
      return;
    }
  }
  target.wake_from_any_thread();
}

void loop::wake_from_any_thread() {
  uint64_t one = 1;
  // eventfd writes of 8 bytes cannot be short; EAGAIN (counter saturated) still wakes.
  [[maybe_unused]] ssize_t n = write(event_fd_, &one, sizeof(one));
}

void loop::request_stop() {
  // Release pairs with the acquire load in run(): the loop sees the flag after the
  // eventfd read completes.
  stopping_.store(true, std::memory_order_release);
  wake_from_any_thread();
}

void loop::post_more_buffers() {
  const uint32_t n = std::min(buf_posted_, buf_count_ - buf_posted_);
  for (uint32_t i = buf_posted_; i < buf_posted_ + n; ++i) {
    io_uring_buf_ring_add(buf_ring_, buf_base_ + size_t(i) * buf_size_, buf_size_, uint16_t(i),
                          io_uring_buf_ring_mask(buf_count_), buf_recycled_++);
  }
  buf_posted_ += n;  // published with the recycled ones, at the end of the batch
  stats_.buffers_posted = buf_posted_;
}

void loop::recycle_buffer(uint16_t bid) {
  io_uring_buf_ring_add(buf_ring_, buf_base_ + size_t(bid) * buf_size_, buf_size_, bid,
                        io_uring_buf_ring_mask(buf_count_), buf_recycled_++);
}

void loop::dispatch(uint64_t ud, int32_t res, uint32_t flags) {
  const uint64_t k = ud >> 56;
  const bool has_buf = (flags & IORING_CQE_F_BUFFER) != 0;
  const uint16_t bid = uint16_t(flags >> IORING_CQE_BUFFER_SHIFT);
  switch (k) {
    case k_user: {
      const uint32_t idx = uint32_t(ud);
      const uint32_t gen = uint32_t(ud >> 32) & 0xffffffu;
      if (idx >= slots_total_ || (slot_at(idx).gen & 0xffffffu) != gen) {
        ++stats_.stale;
        if (has_buf) recycle_buffer(bid);
        return;
      }
      slot& s = slot_at(idx);
      const handler h = s.h;
      if (!(flags & IORING_CQE_F_MORE)) free_slot(idx);
      completion c;
      c.res = res;
      c.flags = flags;
      c.tag = h.tag;
      if (has_buf) {
        c.data = {buf_base_ + size_t(bid) * buf_size_, res > 0 ? size_t(res) : 0};
      } else if (res == -ENOBUFS) {
        ++stats_.enobufs;
        if (buf_posted_ < buf_count_) post_more_buffers();  // before the handler re-arms
      }
      if (h.fn != nullptr) h.fn(h.ctx, c);
      if (has_buf) recycle_buffer(bid);
      return;
    }
    case k_wake:
      ++stats_.wakes;
      if (wake_fn_ != nullptr) wake_fn_(wake_ctx_);
      return;
    case k_eventfd:
      eventfd_armed_ = false;
      // Acquire: pairs with request_stop()'s release store of stopping_.
      if (!stopping_.load(std::memory_order_acquire)) {
        ++stats_.wakes;
        if (wake_fn_ != nullptr) wake_fn_(wake_ctx_);
        arm_eventfd_read();
      }
      return;
    case k_msg_send: {
      // MSG_RING failed (e.g. target CQ overflow): fall back to the target's eventfd.
      uint64_t one = 1;
      [[maybe_unused]] ssize_t n = write(int(uint32_t(ud)), &one, sizeof(one));
      return;
    }
    default:
      if (has_buf) recycle_buffer(bid);
      return;
  }
}

void loop::unlink(timer& t) {
  t.prev_->next_ = t.next_;
  t.next_->prev_ = t.prev_;
  t.next_ = t.prev_ = nullptr;
  t.owner_ = nullptr;
  --timers_armed_;
}

void loop::arm(timer& t, uint64_t delay_ms) {
  check_owner();
  if (t.armed()) unlink(t);
  uint64_t d = refresh_now() + delay_ms;
  if (d <= last_tick_) d = last_tick_ + 1;  // ticks <= last_tick_ are never revisited
  t.deadline_ = d;
  // Appended at the slot's tail: equal deadlines fire in the order they were armed.
  timer* s = &wheel_[d & (wheel_slots - 1)];
  t.next_ = s;
  t.prev_ = s->prev_;
  s->prev_->next_ = &t;
  s->prev_ = &t;
  t.owner_ = this;
  ++timers_armed_;
  // A known hint (the earliest slot with a timer) only moves earlier. An unknown one
  // (UINT64_MAX: reset when it passed, e.g. while expired callbacks run) stays unknown and
  // the next wait rescans: taking d would hide a timer already armed before d.
  if (next_hint_ != UINT64_MAX && d < next_hint_) next_hint_ = d;
}

void loop::disarm(timer& t) {
  if (t.armed()) unlink(t);
}

void loop::expire_timers() {
  const uint64_t now = now_ms_;
  if (now <= last_tick_) return;
  if (timers_armed_ == 0) {
    last_tick_ = now;
    return;
  }
  timer due;  // local sentinel (owner_ null): collect first, fire after, so callbacks may
              // arm or disarm any timer, including ones still in `due`.
  due.next_ = due.prev_ = &due;
  uint64_t from = last_tick_ + 1;
  if (now - from >= wheel_slots) from = now - wheel_slots + 1;
  for (uint64_t tick = from; tick <= now; ++tick) {
    timer* s = &wheel_[tick & (wheel_slots - 1)];
    for (timer* t = s->next_; t != s;) {
      timer* n = t->next_;
      if (t->deadline_ <= now) {
        // Move to due's tail: ticks are visited in increasing order, so due stays sorted
        // by deadline (ties in arming order) unless more than a revolution passed.
        t->prev_->next_ = t->next_;
        t->next_->prev_ = t->prev_;
        t->next_ = &due;
        t->prev_ = due.prev_;
        due.prev_->next_ = t;
        due.prev_ = t;
      }
      t = n;
    }
  }
  if (now - last_tick_ > wheel_slots) {
    // The loop stalled for over a revolution: one slot may hold several deadlines.
    // Stable insertion sort of the (rare, short) due list by deadline.
    timer sorted;
    sorted.next_ = sorted.prev_ = &sorted;
    while (due.next_ != &due) {
      timer* t = due.next_;
      due.next_ = t->next_;
      t->next_->prev_ = &due;
      timer* at = sorted.prev_;
      while (at != &sorted && at->deadline_ > t->deadline_) at = at->prev_;
      t->next_ = at->next_;
      t->prev_ = at;
      at->next_->prev_ = t;
      at->next_ = t;
    }
    if (sorted.next_ != &sorted) {
      due.next_ = sorted.next_;
      due.prev_ = sorted.prev_;
      due.next_->prev_ = &due;
      due.prev_->next_ = &due;
    }
    sorted.next_ = sorted.prev_ = nullptr;
  }
  last_tick_ = now;
  if (next_hint_ <= now) next_hint_ = UINT64_MAX;
  while (due.next_ != &due) {
    timer* t = due.next_;
    unlink(*t);
    if (t->fn_ != nullptr) t->fn_(t->ctx_);
  }
  due.next_ = due.prev_ = nullptr;
}

int64_t loop::next_timer_wait_ms() {
  if (timers_armed_ == 0) return -1;
  if (next_hint_ == UINT64_MAX || next_hint_ <= last_tick_) {
    next_hint_ = UINT64_MAX;
    // The first non-empty slot after last_tick_ bounds the earliest deadline from below,
    // so waking then is never late (at worst early for a timer a revolution away).
    for (uint64_t tick = last_tick_ + 1; tick <= last_tick_ + wheel_slots; ++tick) {
      const timer* s = &wheel_[tick & (wheel_slots - 1)];
      if (s->next_ != s) {
        next_hint_ = tick;
        break;
      }
    }
    if (next_hint_ == UINT64_MAX) return -1;
  }
  return next_hint_ > now_ms_ ? int64_t(next_hint_ - now_ms_) : 0;
}

// Submit and wait with the kernel's min-wait: io_uring_getevents_arg's `pad` is the kernel's
// `min_wait_usec` (liburing 2.3's header predates the name), so this enters the ring itself.
int loop::enter_min_wait(int64_t timer_ms) {
  io_uring_getevents_arg arg{};
  arg.pad = min_wait_us_;
  __kernel_timespec ts{};
  if (timer_ms >= 0) {
    ts.tv_sec = timer_ms / 1000;
    ts.tv_nsec = (timer_ms % 1000) * 1'000'000;
    arg.ts = reinterpret_cast<uint64_t>(&ts);
  }
  // Publish the queued SQEs as liburing's flush does. Release: the SQEs' contents are written
  // before the kernel, which reads the tail with acquire, can see the new tail.
  io_uring_sq& sq = ring_.sq;
  if (sq.sqe_head != sq.sqe_tail) {
    sq.sqe_head = sq.sqe_tail;
    __atomic_store_n(sq.ktail, sq.sqe_tail, __ATOMIC_RELEASE);
  }
  // Acquire: pairs with the kernel's release of the head once it consumed SQEs.
  const unsigned submit = sq.sqe_tail - __atomic_load_n(sq.khead, __ATOMIC_ACQUIRE);
  unsigned flags = IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG;
  int fd = ring_.ring_fd;
  if (ring_registered_) {
    flags |= IORING_ENTER_REGISTERED_RING;
    fd = ring_.enter_ring_fd;
  }
  return io_uring_enter2(unsigned(fd), submit, wait_batch_, flags,
                         reinterpret_cast<sigset_t*>(&arg), sizeof(arg));
}

int loop::run_once(bool wait) {
  refresh_now();
  expire_timers();
  if (hook_fn_ != nullptr && hook_fn_(hook_ctx_)) wait = false;
  if (!eventfd_armed_ && !stopping()) arm_eventfd_read();
  if (buf_recycled_ > 0) {
    io_uring_buf_ring_advance(buf_ring_, buf_recycled_);
    buf_recycled_ = 0;
  }
  const unsigned pending = io_uring_sq_ready(&ring_);
  int r;
  if (wait && !stopping()) {
    const int64_t w = next_timer_wait_ms();
    io_uring_cqe* cqe = nullptr;
    if (wait_batch_ > 0) {
      r = enter_min_wait(w);
    } else if (w < 0) {
      r = io_uring_submit_and_wait(&ring_, 1);
    } else {
      __kernel_timespec ts{};
      ts.tv_sec = w / 1000;
      ts.tv_nsec = (w % 1000) * 1'000'000;
      r = io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &ts, nullptr);
    }
    ++stats_.waits;
  } else {
    r = io_uring_submit(&ring_);
    if (r >= 0) r = io_uring_get_events(&ring_);  // DEFER_TASKRUN: run deferred completions
  }
  if (r < 0 && r != -ETIME && r != -EINTR && r != -EAGAIN && r != -EBUSY) return r;
  stats_.submitted += pending - io_uring_sq_ready(&ring_);

  int handled = 0;
  // Reap in batches: copy a batch out, release the CQ slots at once, then dispatch, so
  // handlers can submit freely and the kernel never waits on CQ space we hold.
  constexpr unsigned batch = 64;
  io_uring_cqe* cqes[batch];
  struct item {
    uint64_t ud;
    int32_t res;
    uint32_t flags;
  } items[batch];
  for (;;) {
    const unsigned n = io_uring_peek_batch_cqe(&ring_, cqes, batch);
    if (n == 0) break;
    for (unsigned i = 0; i < n; ++i) {
      items[i] = {cqes[i]->user_data, cqes[i]->res, cqes[i]->flags};
    }
    io_uring_cq_advance(&ring_, n);
    for (unsigned i = 0; i < n; ++i) dispatch(items[i].ud, items[i].res, items[i].flags);
    handled += int(n);
    if (buf_recycled_ > 0) {
      io_uring_buf_ring_advance(buf_ring_, buf_recycled_);
      buf_recycled_ = 0;
    }
  }
  stats_.completions += uint64_t(handled);
  refresh_now();
  expire_timers();
  return handled;
}

int loop::run() {
  // Acquire: pairs with request_stop()'s release store, so what the stopper wrote before
  // asking is visible once the loop leaves.
  while (!stopping_.load(std::memory_order_acquire)) {
    const int r = run_once(true);
    if (r < 0) return r;
  }
  // Hand the kernel anything queued by the last turn (e.g. final sends) without waiting.
  io_uring_submit(&ring_);
  return 0;
}

}  // namespace feedplane::net
