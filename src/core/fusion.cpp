// Automatic elementwise fusion: the pending chain (core/fusion.hpp).
//
// One chain for the process, under one mutex: calls from several threads may
// share it, and any thread's flush point runs it, so a value pending on one
// thread is never read stale on another. The chain belongs to one device,
// one dtype and one result shape; a call that does not match runs the chain
// first and starts a new one.
//
// The chain holds the calls as made (their tensors included). When it runs,
// they are cut into pieces (Piece: the program, the views it reads, the
// storages it writes), each one kernel. A storage written by the chain whose
// only handles are the chain's own can no longer be read by anyone: its value
// is not stored. A capture's calls wait in a chain of the capturing thread's
// own (capture_chain below).
//
// A chain may begin with a gemm, a convolution, a softmax or a reduction,
// its head: c = op(a)*op(b), c = conv2d(a, b), c = softmax(a) or
// c = sum(a) (mean, max, min), whose result the calls then take up
// (nn::linear's or nn::Conv2d's bias add and the activation after it; a
// mask or scale after a softmax; an epsilon and a square root after a
// mean). The piece holding the head runs as one blas::gemm_epilogue,
// nn::conv2d_epilogue, nn::softmax_epilogue or math::reduce_epilogue, the
// head's result entering the program as its input 0, where the framework
// has that op (the tail is applied where the library allows an epilogue, in
// the head's own kernel, or while the result is still in cache); elsewhere
// a head is never deferred.
#include "core/fusion.hpp"

#include <algorithm>
#include <map>
#include <tuple>
#include <cstdlib>
#include <limits>
#include <span>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/dispatch.hpp"
#include "core/overlap.hpp"
#include "core/storage.hpp"
#include "graph/recorder.hpp"
#include "xylem/error.hpp"
#include "xylem/fused.hpp"
#include "xylem/plugin/fused_program.hpp"
#include "xylem/plugin/math.h"

namespace xylem {
namespace detail {

std::atomic<bool> fusion_pending{false};

namespace {

namespace pf = plugin::fused;

// On the host device a call this small runs on the caller's thread at once
// (native's runs_here) for ~0.4 us: deferring it costs as much as it saves.
// A larger one is queued for the worker, where one fused task in place of
// four ops measured 71 -> 16 us at 16K f32 and 240 -> 22 us at 64K.
constexpr std::int64_t kHostMinElements = 1025;

// Past this many ops (pruned ones included) the chain runs: a loop that
// overwrites one tensor again and again must not grow it without end.
constexpr int kMaxChainOps = 32;

bool env_not_zero(const char* name) {
  const char* env = std::getenv(name);
  return env == nullptr || std::strcmp(env, "0") != 0;
}

bool fusion_on_at_start() { return env_not_zero("XYLEM_FUSE"); }

// XYLEM_FUSE_EPILOGUE=0: gemms are never deferred (their tails fuse among
// themselves only), for comparison.
bool epilogues_on() {
  static const bool on = env_not_zero("XYLEM_FUSE_EPILOGUE");
  return on;
}

std::atomic<bool>& fusion_switch() {
  static std::atomic<bool> on{fusion_on_at_start()};
  return on;
}

// One call as made: its op, codes and parameters, and its tensors (inputs,
// then the output).
struct Call {
  bool unary = true;  // math::unary, else math::binary
  int code = 0;
  double p0 = 0, p1 = 0;
  std::array<Tensor, 3> tensors;
  int num_inputs = 1;
  std::string name;

  [[nodiscard]] const Tensor& output() const noexcept { return tensors[std::size_t(num_inputs)]; }
};

// The op a chain begins with, c a fresh whole tensor of the chain's shape:
// a gemm, c = op(a)*op(b) (alpha 1, beta 0); a convolution,
// c = conv2d(a, b) with the geometry `conv` (nn::conv2d's integers); a
// softmax of a [outer, r, inner] along axis 1, c contiguous in a's element
// order; or a reduction of a along axis 1, c contiguous in [outer, inner]'s
// order (b absent for these two).
struct Head {
  plugin::OpId op = plugin::OpId::blas_gemm;  // or nn_conv2d, nn_softmax, math_reduce
  Tensor a, b, c;
  bool transpose_a = false, transpose_b = false;
  std::array<std::int64_t, 7> conv{};  // stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups
  int mode = 0;  // the softmax's log flag (1: log_softmax); the reduction's XY_RED_* code
  std::string name;

  [[nodiscard]] bool is_conv() const noexcept { return op == plugin::OpId::nn_conv2d; }
  [[nodiscard]] bool is_softmax() const noexcept { return op == plugin::OpId::nn_softmax; }
  [[nodiscard]] bool is_reduce() const noexcept { return op == plugin::OpId::math_reduce; }
  // The head's operands (a softmax or a reduction has one).
  [[nodiscard]] std::vector<const Tensor*> operands() const {
    return is_softmax() || is_reduce() ? std::vector<const Tensor*>{&a} : std::vector<const Tensor*>{&a, &b};
  }
};

// The pending calls: one device, dtype and result shape.
struct Chain {
  // The thread whose calls these are: a call from another thread runs them
  // first and starts a chain of its own, so a program never mixes threads'
  // calls (interleaved, they made a new program, to compile, at every turn:
  // 4 threads on PoCL ran 30x slower than unfused).
  std::thread::id owner;
  std::optional<Backend> backend;
  plugin::Device* device = nullptr;
  std::vector<std::int64_t> dims;
  DType dtype = DType::f32;
  std::optional<Head> head;
  std::vector<Call> calls;

  [[nodiscard]] bool empty() const noexcept { return calls.empty() && !head; }
};

// Counts a pending call of the process's chain in the storages it reads and
// writes (`by` +1 when it joins, -1 once it ran or was dropped).
void mark(const Call& call, int by) {
  for (int k = 0; k < call.num_inputs; ++k) {
    auto& reads = call.tensors[std::size_t(k)].storage()->fusion_reads;
    by > 0 ? reads.fetch_add(1, std::memory_order_relaxed) : reads.fetch_sub(1, std::memory_order_release);
  }
  auto& writes = call.output().storage()->fusion_writes;
  by > 0 ? writes.fetch_add(1, std::memory_order_relaxed) : writes.fetch_sub(1, std::memory_order_release);
}

// The same for a chain's head.
void mark(const Head& head, int by) {
  for (const Tensor* in : head.operands()) {
    auto& reads = in->storage()->fusion_reads;
    by > 0 ? reads.fetch_add(1, std::memory_order_relaxed) : reads.fetch_sub(1, std::memory_order_release);
  }
  auto& writes = head.c.storage()->fusion_writes;
  by > 0 ? writes.fetch_add(1, std::memory_order_relaxed) : writes.fetch_sub(1, std::memory_order_release);
}

std::mutex chain_mutex;
Chain& chain() {
  // Never destroyed: a chain pending at exit must not free device memory
  // after the frameworks are gone.
  static Chain* c = new Chain;
  return *c;
}
thread_local bool flushing = false;

// A capture's calls wait in a chain of the capturing thread's own: only
// that thread may run them, so they are recorded into its graph and no
// other thread's flush runs them outside it.
thread_local Chain capture_chain;

struct Counters {
  std::atomic<std::uint64_t> kernels{0}, calls{0}, stored{0}, dropped{0}, epilogues{0};
} counts;

bool fusible_dtype(DType d) { return d == DType::f16 || d == DType::bf16 || d == DType::f32 || d == DType::f64; }

// A run of consecutive calls built into one program; with the chain's head
// before them (its product is the program's input 0).
struct Piece {
  struct Written {
    Tensor whole;  // the output handle of a call: contiguous, the whole storage
    int value = -1;  // the program value written there last
    int writes = 0;  // how many calls wrote it
  };
  FusedProgram program;  // its outputs are set only when it runs
  std::vector<Tensor> inputs;  // what it reads that it did not write (inputs 0..4)
  std::vector<Written> written;
  std::size_t first = 0, count = 0;  // its calls in the chain
  const Head* head = nullptr;

  // The piece of the head alone: the product is the value of input 0 (an
  // empty handle stands in for it among the inputs) and c's.
  static Piece of_head(const Head& head) {
    Piece piece;
    piece.head = &head;
    piece.inputs.emplace_back();
    piece.written.push_back(Written{head.c, piece.program.input(0).id, 1});
    return piece;
  }
  // Whether there is anything to run.
  [[nodiscard]] bool started() const noexcept { return count > 0 || head != nullptr; }
};

// The epilogue ops' limits: the head's result and three more inputs, twelve
// instructions.
constexpr int kEpilogueInputs = 4;
constexpr std::size_t kEpilogueWords = 6;

// Adds `call` to `piece` if the program still fits storing every storage it
// writes for which `needed` is true (and the call's own result); false, with
// `piece` unchanged, otherwise.
template <class Needed>
bool try_join(Piece& piece, const Call& call, const Needed& needed) {
  const Tensor& out = call.output();
  FusedProgram program = piece.program;
  std::vector<Tensor> new_inputs;
  std::array<FusedProgram::Value, 2> operands{};
  for (int k = 0; k < call.num_inputs; ++k) {
    const Tensor& in = call.tensors[std::size_t(k)];
    const Storage* s = in.storage().get();
    bool found = false;
    for (const Piece::Written& w : piece.written) {
      if (w.whole.storage().get() != s) continue;
      // Its own result, read as it wrote it; another view of it needs the
      // data in memory first.
      if (!(in.layout() == w.whole.layout())) return false;
      operands[std::size_t(k)] = FusedProgram::Value{w.value};
      found = true;
    }
    if (found) continue;
    int index = -1;
    for (std::size_t i = 0; i < piece.inputs.size(); ++i)
      if (piece.inputs[i].storage().get() == s && piece.inputs[i].layout() == in.layout()) index = int(i);
    for (std::size_t i = 0; i < new_inputs.size() && index < 0; ++i)
      if (new_inputs[i].storage().get() == s && new_inputs[i].layout() == in.layout())
        index = int(piece.inputs.size() + i);
    if (index < 0) {
      index = int(piece.inputs.size() + new_inputs.size());
      if (index >= (piece.head ? kEpilogueInputs : pf::kMaxInputs)) return false;
      new_inputs.push_back(in);
    }
    operands[std::size_t(k)] = program.input(index);
  }
  // Writing a storage the piece also reads through another view would
  // change what those reads see mid-kernel.
  for (const std::vector<Tensor>* list : {&piece.inputs, &new_inputs})
    for (const Tensor& in : *list)
      if (in.storage() == out.storage() && (piece.head || !same_elements(in.layout(), out.layout()))) return false;
  // The head reads its operands while the tail writes: never the same memory.
  if (piece.head)
    for (const Tensor* operand : piece.head->operands())
      if (out.storage() == operand->storage()) return false;

  const FusedProgram::Value result =
      call.unary ? program.unary(call.code, operands[0], call.p0, call.p1)
                 : program.binary(call.code, operands[0], operands[1], call.p0, call.p1);
  FusedProgram trial = program;
  int outputs = 0;
  bool rewrites = false;
  for (const Piece::Written& w : piece.written) {
    if (w.whole.storage() == out.storage()) {
      rewrites = true;
      continue;
    }
    if (!needed(w.whole.storage().get())) continue;
    if (outputs == pf::kMaxOutputs - 1) return false;
    trial.output(outputs++, FusedProgram::Value{w.value});
  }
  trial.output(outputs, result);
  if (!trial.fits()) return false;
  if (piece.head) {
    const auto words = trial.words();
    if (std::any_of(words.begin() + kEpilogueWords, words.end(), [](std::int64_t w) { return w != 0; })) return false;
  }

  piece.program = std::move(program);
  for (Tensor& in : new_inputs) piece.inputs.push_back(std::move(in));
  if (rewrites) {
    for (Piece::Written& w : piece.written)
      if (w.whole.storage() == out.storage()) w.value = result.id, ++w.writes;
  } else {
    piece.written.push_back(Piece::Written{out, result.id, 1});
  }
  ++piece.count;
  return true;
}

// Whether `words` (with dtype) ran on `device` before, counting this time.
// Always on the host device: its fused programs need no compiling.
bool seen_before(const plugin::Device& device, plugin::OpId op, DType dtype,
                 const std::array<std::int64_t, 8>& words) {
  if (&device == find_host_device()) return true;
  using Key = std::tuple<const plugin::Device*, plugin::OpId, DType, std::array<std::int64_t, 8>>;
  static std::mutex mutex;
  static std::map<Key, int>* seen = new std::map<Key, int>;  // never destroyed: flushes may run at exit
  std::lock_guard lock(mutex);
  if (seen->size() > 4096) seen->clear();  // programs of long-gone code
  return ++(*seen)[Key{&device, op, dtype, words}] >= 2;
}

// A call as its own op (its own kernel, tuned for it), when its result is
// `needed`.
void run_alone(const Chain& c, const Call& one, bool needed) {
  if (!needed) {
    counts.dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  counts.stored.fetch_add(1, std::memory_order_relaxed);
  if (one.unary) {
    launch(*c.backend,
           args::math_unary<TensorRef>{
               .x = one.tensors[0], .y = one.tensors[1], .code = one.code, .param0 = one.p0, .param1 = one.p1},
           one.name);
  } else {
    launch(*c.backend,
           args::math_binary<TensorRef>{.a = one.tensors[0], .b = one.tensors[1], .y = one.tensors[2],
                                        .code = one.code, .param0 = one.p0, .param1 = one.p1},
           one.name);
  }
}

// The head as its own op, when its result is `needed`.
void run_head_alone(const Chain& c, const Head& h, bool needed) {
  if (!needed) {
    counts.dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  counts.stored.fetch_add(1, std::memory_order_relaxed);
  if (h.is_softmax()) {
    const Tensor c3 = h.c.as_strided(h.c.layout().reshape(h.a.layout().dims()));
    launch(*c.backend, args::nn_softmax<TensorRef>{.x = h.a, .y = c3, .log = h.mode}, h.name);
    return;
  }
  if (h.is_reduce()) {
    const std::array<std::int64_t, 2> dims{h.a.layout().dims()[0], h.a.layout().dims()[2]};
    const Tensor c2 = h.c.as_strided(h.c.layout().reshape(dims));
    launch(*c.backend, args::math_reduce<TensorRef>{.x = h.a, .y = c2, .code = h.mode, .correction = 0}, h.name);
    return;
  }
  if (h.is_conv()) {
    launch(*c.backend,
           args::nn_conv2d<TensorRef>{.x = h.a, .w = h.b, .y = h.c, .stride_h = h.conv[0], .stride_w = h.conv[1],
                                      .pad_h = h.conv[2], .pad_w = h.conv[3], .dilation_h = h.conv[4],
                                      .dilation_w = h.conv[5], .groups = h.conv[6]},
           h.name);
    return;
  }
  launch(*c.backend,
         args::blas_gemm<TensorRef>{.a = h.a, .b = h.b, .c = h.c, .transpose_a = h.transpose_a,
                                    .transpose_b = h.transpose_b, .alpha = 1.0, .beta = 0.0},
         h.name);
}

// The piece's head (if any) and calls one by one, each result stored where a
// later one of the piece reads it, or where it is the last write of a
// storage `needed` asks for.
template <class Needed>
void run_one_by_one(const Chain& c, const Piece& piece, const Needed& needed) {
  const std::size_t end = piece.first + piece.count;
  // Whether a call from `from` on reads (or writes) `s`.
  const auto touched_from = [&](std::size_t from, const Storage* s, bool& read, bool& written) {
    read = written = false;
    for (std::size_t j = from; j < end; ++j) {
      for (int i = 0; i < c.calls[j].num_inputs; ++i) read |= c.calls[j].tensors[std::size_t(i)].storage().get() == s;
      written |= c.calls[j].output().storage().get() == s;
    }
  };
  bool read_later = false, written_later = false;
  if (piece.head) {
    const Storage* out = piece.head->c.storage().get();
    touched_from(piece.first, out, read_later, written_later);
    run_head_alone(c, *piece.head, read_later || (!written_later && needed(out)));
  }
  for (std::size_t k = piece.first; k < end; ++k) {
    const Storage* out = c.calls[k].output().storage().get();
    touched_from(k + 1, out, read_later, written_later);
    run_alone(c, c.calls[k], read_later || (!written_later && needed(out)));
  }
}

// The head's piece as one blas::gemm_epilogue, nn::conv2d_epilogue,
// nn::softmax_epilogue or math::reduce_epilogue: the head's result is the
// program's input 0, the piece's other inputs its 1..3.
void run_epilogue(const Chain& c, const Head& h, const std::vector<Tensor>& inputs, const FusedProgram& program,
                  const std::vector<Tensor>& outputs) {
  const auto words = program.words();
  const auto reals = program.reals();
  const Tensor none;
  const auto input = [&](std::size_t k) -> const Tensor& { return k < inputs.size() ? inputs[k] : none; };
  const auto output = [&](std::size_t j) -> const Tensor& { return j < outputs.size() ? outputs[j] : none; };
  if (h.is_softmax()) {
    launch(*c.backend,
           args::nn_softmax_epilogue<TensorRef>{
               .x = h.a, .x1 = input(1), .x2 = input(2), .x3 = input(3), .y0 = output(0), .y1 = output(1),
               .y2 = output(2), .log = h.mode, .w0 = words[0], .w1 = words[1], .w2 = words[2], .w3 = words[3],
               .w4 = words[4], .w5 = words[5], .r0 = reals[0], .r1 = reals[1], .r2 = reals[2], .r3 = reals[3],
               .r4 = reals[4], .r5 = reals[5], .r6 = reals[6], .r7 = reals[7]},
           h.name);
    return;
  }
  if (h.is_reduce()) {
    launch(*c.backend,
           args::math_reduce_epilogue<TensorRef>{
               .x = h.a, .x1 = input(1), .x2 = input(2), .x3 = input(3), .y0 = output(0), .y1 = output(1),
               .y2 = output(2), .code = h.mode, .w0 = words[0], .w1 = words[1], .w2 = words[2], .w3 = words[3],
               .w4 = words[4], .w5 = words[5], .r0 = reals[0], .r1 = reals[1], .r2 = reals[2], .r3 = reals[3],
               .r4 = reals[4], .r5 = reals[5], .r6 = reals[6], .r7 = reals[7]},
           h.name);
    return;
  }
  if (h.is_conv()) {
    launch(*c.backend,
           args::nn_conv2d_epilogue<TensorRef>{
               .x = h.a, .w = h.b, .x1 = input(1), .x2 = input(2), .x3 = input(3), .y0 = output(0),
               .y1 = output(1), .y2 = output(2), .stride_h = h.conv[0], .stride_w = h.conv[1], .pad_h = h.conv[2],
               .pad_w = h.conv[3], .dilation_h = h.conv[4], .dilation_w = h.conv[5], .groups = h.conv[6],
               .w0 = words[0], .w1 = words[1], .w2 = words[2], .w3 = words[3], .w4 = words[4], .w5 = words[5],
               .r0 = reals[0], .r1 = reals[1], .r2 = reals[2], .r3 = reals[3], .r4 = reals[4], .r5 = reals[5],
               .r6 = reals[6], .r7 = reals[7]},
           h.name);
    return;
  }
  launch(*c.backend,
         args::blas_gemm_epilogue<TensorRef>{
             .a = h.a, .b = h.b, .x1 = input(1), .x2 = input(2), .x3 = input(3), .y0 = output(0), .y1 = output(1),
             .y2 = output(2), .transpose_a = h.transpose_a, .transpose_b = h.transpose_b, .w0 = words[0],
             .w1 = words[1], .w2 = words[2], .w3 = words[3], .w4 = words[4], .w5 = words[5], .r0 = reals[0],
             .r1 = reals[1], .r2 = reals[2], .r3 = reals[3], .r4 = reals[4], .r5 = reals[5], .r6 = reals[6],
             .r7 = reals[7]},
         h.name);
}

// Runs one piece: a single call as its own op (its own kernel, tuned for
// it), a head alone as its gemm, more as one fused kernel (or gemm with its
// epilogue) storing what `needed` asks for.
template <class Needed>
void run_piece(const Chain& c, const Piece& piece, const Needed& needed, bool record) {
  if (piece.count == 1 && !piece.head) {
    run_alone(c, c.calls[piece.first], needed(c.calls[piece.first].output().storage().get()));
    return;
  }
  if (piece.count == 0) {
    run_head_alone(c, *piece.head, needed(piece.head->c.storage().get()));
    return;
  }
  FusedProgram program = piece.program;
  std::vector<Tensor> outputs;
  std::vector<const Piece::Written*> stored;
  for (const Piece::Written& w : piece.written) {
    if (!needed(w.whole.storage().get())) continue;
    program.output(int(outputs.size()), FusedProgram::Value{w.value});
    outputs.push_back(w.whole);
    stored.push_back(&w);
  }
  if (outputs.empty()) {  // nothing anyone can still read
    counts.dropped.fetch_add(piece.written.size(), std::memory_order_relaxed);
    return;
  }
  // A program seen for the first time on a device that compiles it runs as
  // its calls, one by one: code whose chains keep changing would otherwise
  // compile at every turn (the soak test compiled a program every 75 ms on
  // PoCL). A capture fuses at once: it is made to be replayed.
  const plugin::OpId op = !piece.head             ? plugin::OpId::math_fused
                          : piece.head->is_conv()    ? plugin::OpId::nn_conv2d_epilogue
                          : piece.head->is_softmax() ? plugin::OpId::nn_softmax_epilogue
                          : piece.head->is_reduce()  ? plugin::OpId::math_reduce_epilogue
                                                     : plugin::OpId::blas_gemm_epilogue;
  if (!record && !seen_before(*c.device, op, c.dtype, program.words())) {
    run_one_by_one(c, piece, needed);
    return;
  }
  counts.stored.fetch_add(outputs.size(), std::memory_order_relaxed);
  counts.dropped.fetch_add(piece.written.size() - outputs.size(), std::memory_order_relaxed);
  counts.kernels.fetch_add(1, std::memory_order_relaxed);
  if (piece.head) {
    counts.epilogues.fetch_add(1, std::memory_order_relaxed);
    run_epilogue(c, *piece.head, piece.inputs, program, outputs);
  } else {
    fused(*c.backend, program, piece.inputs, outputs);
  }
  // A storage written by several calls counts each in its version, as the
  // calls run one by one would have.
  for (const Piece::Written* w : stored) {
    if (w->writes < 2) continue;
    Storage& s = *w->whole.storage();
    std::lock_guard lock(s.mutex);
    if (DeviceCopy* copy = s.find(*c.device)) s.count_writes(*copy, std::uint64_t(w->writes));
  }
}

// Runs `c` and leaves it empty. Called with chain_mutex held for the
// process's chain; `record`: the calls are the capture's on this thread (its
// recorder stays on), else a capture this thread began after they were made
// records none of them.
//
// What must be stored is known exactly now: a storage someone outside the
// chain holds a handle to (the chain's own handles discounted). The calls
// are cut into pieces that each fit one kernel, in order; a piece also
// stores what a later piece reads.
void run_chain(Chain& c, bool record = false) {
  if (c.empty()) return;
  Chain taken = std::move(c);
  c = Chain{};
  // The calls' memory goes back to `c` once they have run (no allocation per
  // chain); the handles they hold are released first.
  struct GiveBack {
    Chain& c;
    Chain& taken;
    ~GiveBack() {
      taken.calls.clear();
      if (c.calls.capacity() == 0) c.calls.swap(taken.calls);
    }
  } give_back{c, taken};
  // Once the calls ran (their writes recorded in the storages) or failed,
  // the storages stop counting them (the process's chain only: a capture's
  // calls are not counted).
  struct ReleaseMarks {
    const Chain& taken;
    bool marked;
    ~ReleaseMarks() {
      if (!marked) return;
      if (taken.head) mark(*taken.head, -1);
      for (const Call& call : taken.calls) mark(call, -1);
    }
  } release_marks{taken, !record};
  counts.calls.fetch_add(taken.calls.size(), std::memory_order_relaxed);
  const auto own_handles = [&](const Storage* s) {
    long n = 0;
    if (taken.head)
      for (const Tensor* t : {&taken.head->a, &taken.head->b, &taken.head->c}) n += t->storage().get() == s;
    for (const Call& call : taken.calls)
      for (const Tensor& t : call.tensors) n += t.storage().get() == s;
    return n;
  };
  // In a capture every result is stored: the graph is replayed later, and
  // what it writes should not depend on which handles lived at its end.
  std::vector<const Storage*> visible;
  const auto add_visible = [&](const Tensor& out) {
    const Storage* s = out.storage().get();
    if (std::find(visible.begin(), visible.end(), s) == visible.end() &&
        (record || out.storage().use_count() > own_handles(s)))
      visible.push_back(s);
  };
  if (taken.head) add_visible(taken.head->c);
  for (const Call& call : taken.calls) add_visible(call.output());
  // Read by a call from `from` on.
  const auto read_from = [&](std::size_t from, const Storage* s) {
    for (std::size_t k = from; k < taken.calls.size(); ++k)
      for (int i = 0; i < taken.calls[k].num_inputs; ++i)
        if (taken.calls[k].tensors[std::size_t(i)].storage().get() == s) return true;
    return false;
  };

  struct Flushing {
    Flushing() { flushing = true; }
    ~Flushing() { flushing = false; }
  } in_flush;
  std::optional<RecorderPause> no_capture;
  if (!record) no_capture.emplace();
  if (!taken.head && taken.calls.size() == 1) {  // the commonest chain: nothing to fuse or cut
    run_alone(taken, taken.calls[0], !visible.empty());
    return;
  }
  Piece piece = taken.head ? Piece::of_head(*taken.head) : Piece{};
  for (std::size_t k = 0; k < taken.calls.size(); ++k) {
    const auto needed_after = [&](const Storage* s) {
      return std::find(visible.begin(), visible.end(), s) != visible.end() || read_from(k + 1, s);
    };
    if (piece.started() && try_join(piece, taken.calls[k], needed_after)) continue;
    if (piece.started()) {
      run_piece(
          taken, piece,
          [&](const Storage* s) { return std::find(visible.begin(), visible.end(), s) != visible.end() || read_from(k, s); },
          record);
    }
    piece = Piece{};
    piece.first = k;
    // One call alone always fits.
    if (!try_join(piece, taken.calls[k], needed_after))
      throw Error(ErrorCode::internal, "fusion: one call does not fit a fused program");
  }
  run_piece(
      taken, piece, [&](const Storage* s) { return std::find(visible.begin(), visible.end(), s) != visible.end(); },
      record);
}

// The call's output allocated on the device now, so running out of memory
// is the call's error, named as the unfused launch names it.
void allocate_output(const Backend& backend, plugin::Device& device, const Tensor& out, std::string_view name,
                     std::string_view arg = "y") {
  Storage& s = *out.storage();
  std::lock_guard lock(s.mutex);
  try {
    (void)s.allocated_copy(device);
  } catch (const Error& e) {
    throw Error(e.code(), std::string(name) + ": argument '" + std::string(arg) + "' (shape " +
                              out.layout().dims_string() + ", " +
                              std::string(xylem::name(out.dtype())) + ") on " + backend.id() + ": " + e.message());
  }
}

// Whether the call may read `t`: written, or pending in `c`; in a capture
// also current on `device` (a transfer is not recorded: the unfused launch
// refuses it, naming the op).
bool readable(const Chain& c, const Tensor& t, plugin::Device& device, bool capturing) {
  if (c.head && c.head->c.storage() == t.storage()) return true;
  for (const Call& call : c.calls)
    if (call.output().storage() == t.storage()) return true;
  Storage& s = *t.storage();
  std::lock_guard lock(s.mutex);
  if (!s.written()) return false;
  if (!capturing) return true;
  const DeviceCopy* copy = s.find(device);
  return copy != nullptr && copy->version == s.latest();
}

// Whether a call with these arguments depends on the process's chain: a
// pending call writes what it reads or writes, or reads what it writes.
bool depends_on_chain(const std::array<const Tensor*, plugin::kMaxOpTensors>& t,
                      const std::array<plugin::Access, plugin::kMaxOpTensors>& access, int n) {
  for (int i = 0; i < n; ++i) {
    if (t[std::size_t(i)] == nullptr) continue;
    const Storage& s = *t[std::size_t(i)]->storage();
    if (s.fusion_writes.load(std::memory_order_acquire) != 0) return true;
    if (access[std::size_t(i)] != plugin::Access::read && s.fusion_reads.load(std::memory_order_acquire) != 0)
      return true;
  }
  return false;
}

}  // namespace

thread_local bool fusion_capture_pending = false;

FusionCounts fusion_counts() noexcept {
  return {counts.kernels.load(), counts.calls.load(), counts.stored.load(), counts.dropped.load(),
          counts.epilogues.load()};
}

void flush_capture_chain() {
  if (flushing) return;
  fusion_capture_pending = false;
  run_chain(capture_chain, /*record=*/true);
}

void end_capture_fusion(bool run) {
  if (run) {
    flush_capture_chain();
    return;
  }
  fusion_capture_pending = false;
  capture_chain = Chain{};
}

void flush_fusion_now() {
  if (flushing) return;  // the chain's own kernel, launched by the flush
  std::lock_guard lock(chain_mutex);
  try {
    run_chain(chain());
  } catch (...) {
    fusion_pending.store(false, std::memory_order_release);
    throw;
  }
  fusion_pending.store(false, std::memory_order_release);
}

namespace {

// The chain a call of this thread joins: the capture's, or the process's
// (held locked).
struct Joining {
  bool capturing = false;
  std::unique_lock<std::mutex> lock;
  Chain* chain = nullptr;

  void run_pending() const {
    if (capturing) {
      fusion_capture_pending = false;
      run_chain(*chain, /*record=*/true);
    } else {
      run_chain(*chain);
      fusion_pending.store(false, std::memory_order_release);
    }
  }
  // Makes the chain, empty, this thread's for these calls.
  void start(const Backend& backend, plugin::Device& device, std::span<const std::int64_t> dims, DType dtype) const {
    Chain& c = *chain;
    c.owner = std::this_thread::get_id();
    c.backend = backend;
    c.device = &device;
    c.dims.assign(dims.begin(), dims.end());
    c.dtype = dtype;
  }
  // After a call or head joined (`marks` counts it in its storages).
  template <class Joined>
  void joined(const Joined& added) const {
    if (capturing) {
      fusion_capture_pending = true;
    } else {
      mark(added, +1);
      fusion_pending.store(true, std::memory_order_release);
    }
  }
};

// The chain to join, or nothing: another thread's calls are pending and the
// call does not depend on them, so it runs alone, now (a chain never mixes
// two threads' calls).
std::optional<Joining> chain_to_join(const std::array<const Tensor*, plugin::kMaxOpTensors>& t,
                                     const std::array<plugin::Access, plugin::kMaxOpTensors>& access, int n) {
  Joining j;
  j.capturing = active_recorder() != nullptr;
  if (j.capturing && fusion_pending.load(std::memory_order_acquire) && depends_on_chain(t, access, n))
    flush_fusion_now();  // the process's chain, made before the capture: not recorded
  if (!j.capturing) j.lock = std::unique_lock(chain_mutex);
  j.chain = j.capturing ? &capture_chain : &chain();
  const Chain& c = *j.chain;
  if (!j.capturing && !c.empty() && c.owner != std::this_thread::get_id()) {
    if (!depends_on_chain(t, access, n)) return std::nullopt;
    j.run_pending();
  }
  return j;
}

bool small_on_host(const plugin::Device& device, const Tensor& out) {
  return &device == find_host_device() && out.numel() < kHostMinElements;
}

// A blas::gemm that may begin a chain: c = op(a)*op(b) into a fresh whole c
// of a float dtype, each size within 32 bits (the libraries' limit, raised
// by the call itself when it runs unfused), on a device with the epilogue.
bool head_candidate(const plugin::OpCall& call, const std::array<const Tensor*, plugin::kMaxOpTensors>& t,
                    plugin::Device& device) {
  if (!epilogues_on() || call.num_tensors != 3 || call.f[0] != 1.0 || call.f[1] != 0.0) return false;
  const Tensor &a = *t[0], &b = *t[1], &c = *t[2];
  const DType dtype = c.dtype();
  if (!fusible_dtype(dtype) || a.dtype() != dtype || b.dtype() != dtype || c.numel() == 0) return false;
  if (!covers_whole_storage(c)) return false;
  if (small_on_host(device, c) || a.storage() == c.storage() || b.storage() == c.storage()) return false;
  constexpr std::int64_t kLimit = std::numeric_limits<std::int32_t>::max();
  for (const Tensor* m : {&a, &b, &c})
    for (std::size_t axis = 0; axis < 2; ++axis)
      if (m->layout().dims()[axis] > kLimit || m->layout().strides()[axis] > kLimit) return false;
  const std::int64_t k = call.i[0] != 0 ? a.layout().dims()[0] : a.layout().dims()[1];
  return k > 0 && device.supports(plugin::OpId::blas_gemm_epilogue, dtype) &&
         device.supports(plugin::OpId::blas_gemm, dtype);
}

// An nn::conv2d that may begin a chain: into a fresh whole y of a float
// dtype, neither operand sharing its memory, on a device with the epilogue.
bool conv_head_candidate(const std::array<const Tensor*, plugin::kMaxOpTensors>& t, plugin::Device& device) {
  if (!epilogues_on()) return false;
  const Tensor &x = *t[0], &w = *t[1], &y = *t[2];
  const DType dtype = y.dtype();
  if (!fusible_dtype(dtype) || x.dtype() != dtype || w.dtype() != dtype || y.numel() == 0 || x.numel() == 0)
    return false;
  if (!covers_whole_storage(y) || small_on_host(device, y) || x.storage() == y.storage() || w.storage() == y.storage())
    return false;
  return device.supports(plugin::OpId::nn_conv2d_epilogue, dtype) && device.supports(plugin::OpId::nn_conv2d, dtype);
}

// The gemm or convolution begins a new chain (what is pending runs first);
// false: it runs now, unfused.
bool defer_head(const Backend& backend, const plugin::OpCall& call,
                const std::array<const Tensor*, plugin::kMaxOpTensors>& t,
                const std::array<plugin::Access, plugin::kMaxOpTensors>& access, std::string_view name) {
  plugin::Device& device = plugin::device_of(backend);
  const bool conv = call.op == plugin::OpId::nn_conv2d;
  if (flushing || !fusion_switch().load(std::memory_order_relaxed) ||
      !(conv ? conv_head_candidate(t, device) : head_candidate(call, t, device)))
    return false;
  std::optional<Joining> j = chain_to_join(t, access, call.num_tensors);
  if (!j) return false;
  if (!j->chain->empty()) j->run_pending();
  for (int k = 0; k < 2; ++k)
    if (!readable(*j->chain, *t[std::size_t(k)], device, j->capturing)) return false;
  const Tensor& c = *t[2];
  allocate_output(backend, device, c, name, "c");
  j->start(backend, device, c.layout().dims(), c.dtype());
  Head head{.op = call.op, .a = *t[0], .b = *t[1], .c = c, .name = std::string(name)};
  if (conv) {
    std::copy_n(call.i.begin(), head.conv.size(), head.conv.begin());
  } else {
    head.transpose_a = call.i[0] != 0;
    head.transpose_b = call.i[1] != 0;
  }
  j->chain->head = std::move(head);
  j->joined(*j->chain->head);
  return true;
}

}  // namespace

bool defer_elementwise(const Backend& backend, const plugin::OpCall& call,
                       const std::array<const Tensor*, plugin::kMaxOpTensors>& t,
                       const std::array<plugin::Access, plugin::kMaxOpTensors>& access, std::string_view name) {
  const int num_tensors = call.num_tensors;
  // Before the call runs unfused: what it depends on runs first.
  const auto run_what_it_needs = [&] {
    if (fusion_capture_pending) flush_capture_chain();
    if (fusion_pending.load(std::memory_order_acquire) && depends_on_chain(t, access, num_tensors)) flush_fusion_now();
  };
  if ((call.op == plugin::OpId::blas_gemm || call.op == plugin::OpId::nn_conv2d) &&
      defer_head(backend, call, t, access, name))
    return true;
  const bool unary = call.op == plugin::OpId::math_unary;
  if (!unary && call.op != plugin::OpId::math_binary) {
    run_what_it_needs();
    return false;
  }
  const int num_in = unary ? 1 : 2;
  const Tensor* out = t[std::size_t(num_in)];
  plugin::Device& device = plugin::device_of(backend);
  const DType dtype = out->dtype();
  const auto joinable = [&] {
    if (flushing || !fusion_switch().load(std::memory_order_relaxed)) return false;
    // The result must be a fresh whole tensor: a view written in place of
    // part of a larger one runs as its own call.
    if (!fusible_dtype(dtype) || out->numel() == 0 || small_on_host(device, *out) || !covers_whole_storage(*out))
      return false;
    for (int k = 0; k < num_in; ++k) {
      if (t[std::size_t(k)] == nullptr || t[std::size_t(k)]->dtype() != dtype) return false;
      // An input that overlaps the output other than element for element
      // goes through the unfused launch, which copies it first.
      if (t[std::size_t(k)]->storage() == out->storage() &&
          !same_elements(t[std::size_t(k)]->layout(), out->layout()))
        return false;
    }
    return device.supports(plugin::OpId::math_fused, dtype) && device.supports(call.op, dtype);
  };
  if (!joinable()) {
    run_what_it_needs();
    return false;
  }
  std::optional<Joining> j = chain_to_join(t, access, num_tensors);
  if (!j) return false;
  Chain& c = *j->chain;
  const auto dims = out->layout().dims();
  const bool same_kind = !c.empty() && c.device == &device && c.dtype == dtype &&
                         std::equal(c.dims.begin(), c.dims.end(), dims.begin(), dims.end());
  if (!c.empty() && (!same_kind || c.calls.size() >= std::size_t(kMaxChainOps))) j->run_pending();
  // An input never written (or, in a capture, current elsewhere only): the
  // unfused launch raises the error.
  for (int k = 0; k < num_in; ++k) {
    if (!readable(c, *t[std::size_t(k)], device, j->capturing)) {
      j->run_pending();
      return false;
    }
  }
  allocate_output(backend, device, *out, name);
  if (c.empty()) j->start(backend, device, dims, dtype);
  Call added;
  added.unary = unary;
  added.code = int(call.i[0]);
  added.p0 = call.f[0];
  added.p1 = call.f[1];
  added.num_inputs = num_in;
  for (int k = 0; k <= num_in; ++k) added.tensors[std::size_t(k)] = *t[std::size_t(k)];
  added.name = std::string(name);
  c.calls.push_back(std::move(added));  // counted in its storages only once it is in the chain
  j->joined(c.calls.back());
  return true;
}

namespace {

// A softmax or reduction of x3 [outer, r, inner] into y (its view y3)
// begins a new chain: the checks both share (defer_softmax,
// defer_reduce's comments say which calls they take).
bool defer_row_head(const Backend& backend, plugin::OpId op, plugin::OpId epilogue, int mode, const Tensor& x3,
                    const Tensor& y3, const Tensor& y, std::string_view name) {
  if (flushing || !epilogues_on() || !fusion_switch().load(std::memory_order_relaxed)) return false;
  plugin::Device& device = plugin::device_of(backend);
  const DType dtype = y.dtype();
  // y3 must be y itself, reshaped (no temporary the caller copies back),
  // and y a fresh whole tensor that x does not share.
  if (!fusible_dtype(dtype) || x3.dtype() != dtype || y.numel() == 0 || x3.numel() == 0 ||
      y3.storage() != y.storage() || !covers_whole_storage(y) || small_on_host(device, y) ||
      x3.storage() == y.storage())
    return false;
  if (!device.supports(epilogue, dtype) || !device.supports(op, dtype)) return false;
  const std::array<const Tensor*, plugin::kMaxOpTensors> t{&x3, &y3};
  const std::array<plugin::Access, plugin::kMaxOpTensors> access{plugin::Access::read, plugin::Access::write};
  std::optional<Joining> j = chain_to_join(t, access, 2);
  if (!j) return false;
  if (!j->chain->empty()) j->run_pending();
  if (!readable(*j->chain, x3, device, j->capturing)) return false;
  allocate_output(backend, device, y, name);
  j->start(backend, device, y.layout().dims(), dtype);
  j->chain->head = Head{.op = op, .a = x3, .c = y, .mode = mode, .name = std::string(name)};
  j->joined(*j->chain->head);
  return true;
}

}  // namespace

bool defer_softmax(const Backend& backend, const Tensor& x3, const Tensor& y3, const Tensor& y, int log,
                   std::string_view name) {
  return defer_row_head(backend, plugin::OpId::nn_softmax, plugin::OpId::nn_softmax_epilogue, log, x3, y3, y, name);
}

bool defer_reduce(const Backend& backend, const Tensor& x3, const Tensor& y2, const Tensor& y, int code,
                  std::string_view name) {
  if (code != XY_RED_SUM && code != XY_RED_MEAN && code != XY_RED_MAX && code != XY_RED_MIN) return false;
  return defer_row_head(backend, plugin::OpId::math_reduce, plugin::OpId::math_reduce_epilogue, code, x3, y2, y,
                        name);
}

}  // namespace detail

void set_fusion(bool on) {
  detail::fusion_switch().store(on, std::memory_order_relaxed);
  if (!on) detail::flush_fusion();
}

bool fusion_enabled() noexcept { return detail::fusion_switch().load(std::memory_order_relaxed); }

}  // namespace xylem
