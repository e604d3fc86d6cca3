// bench_tokenize_memory.cpp — a benchmark program (not a test): the peak memory of
// `lorascope-train tokenize` per byte of input (issue 20 item 5: a 200 MB line took 23x its
// size). It generates the input on the fly (words, digits, punctuation, accents, CJK; one line,
// or LINES lines), pipes it into the command, checks that the ids come out, and prints the
// child's peak RSS beside the same command's on an empty input (the tokenizer alone).
//
//   bench_tokenize_memory [--mib N (200)] [--lines K (1)] [--tokenizer PATH] [--train PATH]
#include <sys/resource.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "common/ChildProcess.h"

using lorascope::common::ChildOptions;
using lorascope::common::ChildProcess;

namespace {

struct Run {
  std::uint64_t outputBytes = 0;
  std::uint64_t lines = 0;
  int exitCode = 0;
  std::string errors;
};

// Appends `bytes` of generated text (no newline) to `out`; `state` carries the generator on.
void generate(std::size_t bytes, std::uint64_t& state, std::string& out) {
  static const char* const kWords[] = {"the",  "Quick",  "brown", "fox's", "jumps", "over",
                                       "1234", "7",      "lazy",  "dog.",  "café",  "naïve",
                                       "日本", "résumé", "(a)",   "e.g.",  "I'll",  "42,"};
  constexpr std::size_t kCount = sizeof kWords / sizeof kWords[0];
  const std::size_t begin = out.size();
  const std::size_t end = begin + bytes;
  while (out.size() < end) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    out += kWords[(state >> 33) % kCount];
    out += ' ';
  }
  // Exactly `bytes`, never ending inside a character: cut before the character that crosses the
  // end and pad with letters.
  std::size_t cut = end;
  while (cut > begin && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80)
    --cut;
  out.resize(cut);
  out.append(end - cut, 'x');
}

// Runs `tokenize` on `totalBytes` of generated text in `lines` lines.
Run tokenize(const std::string& train, const std::string& tokenizerPath, std::uint64_t totalBytes,
             std::uint64_t lines) {
  ChildProcess child(ChildOptions{train, {"tokenize", "--tokenizer", tokenizerPath}, {}});
  Run run;
  std::thread writer([&] {
    constexpr std::size_t kBlock = 1 << 20;
    std::uint64_t state = 20261126;
    std::string block;
    const std::uint64_t perLine = lines > 0 ? totalBytes / lines : 0;
    for (std::uint64_t line = 0; line < lines; ++line) {
      for (std::uint64_t sent = 0; sent < perLine;) {
        block.clear();
        const std::size_t n =
            static_cast<std::size_t>(std::min<std::uint64_t>(kBlock, perLine - sent));
        generate(n, state, block);
        if (!child.write(block))
          return;
        sent += n;
      }
      if (!child.write("\n"))
        return;
    }
    child.closeInput();
  });
  std::thread errors([&] {
    std::vector<char> buffer(4096);
    for (std::size_t n; (n = child.readErrorOutput(buffer)) > 0;)
      run.errors.append(buffer.data(), n);
  });
  std::vector<char> buffer(1 << 16);
  for (std::size_t n; (n = child.readOutput(buffer)) > 0;) {
    run.outputBytes += n;
    for (std::size_t i = 0; i < n; ++i)
      run.lines += buffer[i] == '\n';
  }
  writer.join();
  errors.join();
  const auto exit = child.wait();
  run.exitCode = exit.signaled ? 128 + exit.signal : exit.exitCode;
  return run;
}

long peakChildRssKiB() {
  rusage usage{};
  ::getrusage(RUSAGE_CHILDREN, &usage);
  return usage.ru_maxrss;  // the largest child reaped so far, in KiB
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t mib = 200;
  std::uint64_t lines = 1;
  std::string tokenizerPath = LORASCOPE_BENCH_TOKENIZER;
  std::string train = LORASCOPE_TRAIN;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--mib") {
      mib = std::strtoull(argv[i + 1], nullptr, 10);
    } else if (flag == "--lines") {
      lines = std::strtoull(argv[i + 1], nullptr, 10);
    } else if (flag == "--tokenizer") {
      tokenizerPath = argv[i + 1];
    } else if (flag == "--train") {
      train = argv[i + 1];
    } else {
      std::fprintf(stderr, "usage: %s [--mib N] [--lines K] [--tokenizer PATH] [--train PATH]\n",
                   argv[0]);
      return 2;
    }
  }
  if (lines == 0 || mib == 0) {
    std::fprintf(stderr, "--mib and --lines must be at least 1\n");
    return 2;
  }
  // The tokenizer alone first: the largest child so far is then the run itself.
  const Run empty = tokenize(train, tokenizerPath, 0, 0);
  const long baseKiB = peakChildRssKiB();
  const std::uint64_t bytes = mib << 20;
  const Run big = tokenize(train, tokenizerPath, bytes, lines);
  const long peakKiB = peakChildRssKiB();
  if (empty.exitCode != 0 || big.exitCode != 0 || big.lines != lines) {
    std::fprintf(stderr, "tokenize failed (exit %d, %llu of %llu lines): %s\n", big.exitCode,
                 static_cast<unsigned long long>(big.lines), static_cast<unsigned long long>(lines),
                 big.errors.c_str());
    return 1;
  }
  const double input = static_cast<double>(bytes);
  std::printf("%s tokenize, %llu MiB in %llu line(s), %s\n", train.c_str(),
              static_cast<unsigned long long>(mib), static_cast<unsigned long long>(lines),
              tokenizerPath.c_str());
  std::printf("  ids out               %.1f MiB of text\n", big.outputBytes / 1048576.0);
  std::printf("  peak RSS, empty input %.1f MiB (the tokenizer)\n", baseKiB / 1024.0);
  std::printf("  peak RSS              %.1f MiB\n", peakKiB / 1024.0);
  std::printf("  per input byte        %.2fx (beyond the empty input's: %.2fx)\n",
              peakKiB * 1024.0 / input, (peakKiB - baseKiB) * 1024.0 / input);
  return 0;
}
