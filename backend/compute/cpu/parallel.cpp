// cpu/parallel.cpp — one persistent pool of cpuThreads() − 1 workers plus the calling thread.
//
// Note [why our own pool, and OpenBLAS at one thread]: the backend calls OpenBLAS from many
// threads at once (attention tiles, GEMM tiles). OpenBLAS' pthread pool, if left at N threads,
// would split each of those calls again and leave its workers spinning after every GEMM while
// ours want the same cores. So OpenBLAS is set to one thread for good and the backend splits the
// large GEMMs itself (cpu/matmul.cpp): one pool, one thread count, no oversubscription.
//
// A job is handed out through an atomic item counter; every worker acknowledges every job, so
// the job's fields stay unchanged until the last worker has finished with them. Workers spin
// briefly before sleeping because the ops of a training step follow one another within
// microseconds and a futex wake-up per op would cost more than the op on small tensors.
//
// Note [sleeping without std::atomic::wait]: a thread that has spun long enough sleeps on a
// Doorbell (a mutex and condition variable, entered only by sleepers and by a ring that sees
// one), not on std::atomic::wait. Where libstdc++ has no futex to wait on (GCC 12's, built for
// mingw-w64: the Windows build), atomic::wait reads the value before it takes its waiter pool's
// mutex and notify signals the condition variable without taking it, so a change and its notify
// landing between that read and the sleep are lost: the pool hung for good under Wine (a worker
// asleep on a generation already stepped, the caller asleep on its acknowledgement). The
// Doorbell checks the value under its mutex, and a ring takes that mutex before it signals.
#include "compute/cpu/parallel.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <cblas.h>  // defines: openblas_get_num_threads, openblas_set_num_threads, openblas_get_*

namespace lorascope::compute::cpu {
namespace {

constexpr int kSpinRounds = 1 << 14;  // pause loops (≈ 0.5 ms) before a worker sleeps

void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Where threads that wait for one atomic sleep (Note [sleeping without std::atomic::wait]).
// Whoever changes the atomic rings after the change; a ring costs a fence and a load while
// nobody sleeps.
class Doorbell {
 public:
  // Sleeps until `value` differs from `old`; returns the new value.
  template <typename T>
  T sleepUntilChanged(const std::atomic<T>& value, T old) {
    sleepers_.fetch_add(1, std::memory_order_relaxed);
    // Pairs with ring()'s fence: either this thread reads the change below, or ring() reads
    // this sleeper and signals.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    T now = old;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] {
        now = value.load(std::memory_order_acquire);
        return now != old;
      });
    }
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
    return now;
  }

  // Wakes every sleeper; called after the change to the value they wait on.
  void ring() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_relaxed) == 0) {
      return;
    }
    // A sleeper between its check and its wait holds the mutex: once this lock is had, it either
    // waits (and the signal reaches it) or has yet to check (and reads the change).
    { std::lock_guard lock(mutex_); }
    wake_.notify_all();
  }

 private:
  std::atomic<int> sleepers_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
};

// Waits until `value` differs from `old`: spinning first, then sleeping on `bell`.
template <typename T>
T waitForChange(const std::atomic<T>& value, T old, Doorbell& bell) {
  for (int i = 0; i < kSpinRounds; ++i) {
    const T now = value.load(std::memory_order_acquire);
    if (now != old) {
      return now;
    }
    cpuRelax();
  }
  return bell.sleepUntilChanged(value, old);
}

thread_local bool tInsideJob = false;  // nested parallel calls run serially

class Pool {
 public:
  explicit Pool(int workers) {
    for (int i = 0; i < workers; ++i) {
      workers_.emplace_back([this] { workerLoop(); });
    }
  }
  ~Pool() {
    stop_ = true;
    pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
    generationBell_.ring();
    for (std::thread& w : workers_) {
      w.join();
    }
  }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  int workers() const { return static_cast<int>(workers_.size()); }

  void run(std::int64_t count, const std::function<void(std::int64_t)>& body) {
    body_ = &body;
    count_ = count;
    next_.store(0, std::memory_order_relaxed);
    pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
    generationBell_.ring();
    drain();
    for (int left = pending_.load(std::memory_order_acquire); left != 0;
         left = pending_.load(std::memory_order_acquire)) {
      waitForChange(pending_, left, pendingBell_);
    }
  }

 private:
  void drain() {
    for (std::int64_t i = next_.fetch_add(1, std::memory_order_relaxed); i < count_;
         i = next_.fetch_add(1, std::memory_order_relaxed)) {
      (*body_)(i);
    }
  }

  void workerLoop() {
    tInsideJob = true;
    std::uint64_t seen = 0;
    for (;;) {
      seen = waitForChange(generation_, seen, generationBell_);
      if (stop_) {
        return;
      }
      drain();
      pending_.fetch_sub(1, std::memory_order_acq_rel);
      pendingBell_.ring();
    }
  }

  std::vector<std::thread> workers_;
  std::atomic<std::uint64_t> generation_{0};  // one step per job
  std::atomic<int> pending_{0};               // workers yet to acknowledge the current job
  std::atomic<std::int64_t> next_{0};         // next item of the current job
  Doorbell generationBell_;                   // workers sleep here for the next job
  Doorbell pendingBell_;                      // the caller sleeps here for acknowledgements
  const std::function<void(std::int64_t)>* body_ = nullptr;
  std::int64_t count_ = 0;
  bool stop_ = false;  // published by the generation step
};

std::mutex gPoolMutex;  // one job at a time; guards gPool
std::unique_ptr<Pool> gPool;
std::atomic<int> gThreads{0};  // 0 until the first use
std::once_flag gInitOnce;

void initThreads() {
  std::call_once(gInitOnce, [] {
    int expected = 0;
    gThreads.compare_exchange_strong(expected, std::max(1, openblas_get_num_threads()));
    openblas_set_num_threads(1);  // Note [why our own pool, and OpenBLAS at one thread]
  });
}

}  // namespace

int cpuThreads() {
  initThreads();
  return gThreads.load(std::memory_order_relaxed);
}

void keepBlasSingleThreaded() {
  thread_local bool pinned = false;
  if (!pinned) {
    initThreads();
    openblas_set_num_threads(1);  // Note [why our own pool, and OpenBLAS at one thread]
    pinned = true;
  }
}

std::string blasDescription() {
  const int model = openblas_get_parallel();
  return std::string(openblas_get_config()) + ", core " + openblas_get_corename() + ", " +
         (model == 0   ? "sequential"
          : model == 1 ? "pthreads"
                       : "OpenMP") +
         " build";
}

int cpuThreadsHere() {
  return tInsideJob ? 1 : cpuThreads();
}

void setCpuThreads(int threads) {
  initThreads();
  gThreads.store(std::max(1, threads), std::memory_order_relaxed);
}

void parallelFor(std::int64_t count, const std::function<void(std::int64_t)>& body) {
  const int threads = cpuThreads();
  auto serial = [&] {
    for (std::int64_t i = 0; i < count; ++i) {
      body(i);
    }
  };
  if (count <= 1 || threads <= 1 || tInsideJob) {
    serial();
    return;
  }
  std::unique_lock lock(gPoolMutex, std::try_to_lock);
  if (!lock.owns_lock()) {  // another thread's op holds the pool
    serial();
    return;
  }
  if (!gPool || gPool->workers() != threads - 1) {
    gPool.reset();
    gPool = std::make_unique<Pool>(threads - 1);
  }
  tInsideJob = true;
  gPool->run(count, body);
  tInsideJob = false;
}

float* threadScratch(ScratchSlot slot, std::int64_t floats) {
  thread_local std::array<std::vector<float>, kScratchSlots> buffers;
  std::vector<float>& buffer = buffers.at(static_cast<std::size_t>(slot));
  if (static_cast<std::int64_t>(buffer.size()) < floats) {
    buffer.resize(static_cast<std::size_t>(floats));
  }
  return buffer.data();
}

void parallelRanges(std::int64_t count, std::int64_t grain,
                    const std::function<void(std::int64_t, std::int64_t)>& body) {
  const std::int64_t step = std::max<std::int64_t>(grain, 1);
  parallelFor((count + step - 1) / step, [&](std::int64_t chunk) {
    const std::int64_t begin = chunk * step;
    body(begin, std::min(count, begin + step));
  });
}

}  // namespace lorascope::compute::cpu
