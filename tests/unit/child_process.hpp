#pragma once
// Runs this test executable again in a child process, with some variables
// added to its environment and a GoogleTest filter picking the tests it
// runs. For what a process does once (load plugins, compile and cache
// programs) or may not survive (a regression that crashes it). With the
// scratch directories and file bytes such tests prepare for their children.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace xylem_test {

using Bytes = std::vector<unsigned char>;

inline Bytes read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::filesystem::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.flush()) << "cannot write " << path;
}

// A fresh directory, removed with everything in it at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string name = (std::filesystem::temp_directory_path() / "xylem-test-XXXXXX").string();
    if (::mkdtemp(name.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + name);
    path_ = name;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

struct ChildResult {
  int exit_code = -1;  // -1 when it did not exit normally
  int signal = 0;      // the signal that ended it, if one did
  std::string output;  // stdout and stderr together

  [[nodiscard]] bool passed() const noexcept { return exit_code == 0; }
  [[nodiscard]] std::string describe() const {
    return (signal ? "killed by signal " + std::to_string(signal) : "exit code " + std::to_string(exit_code)) +
           "; its output:\n" + output;
  }
};

inline ChildResult run_this_test(const std::string& gtest_filter, const std::map<std::string, std::string>& env) {
  ChildResult result;
  std::array<char, 4096> self{};
  const ssize_t length = ::readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (length <= 0) {
    result.output = "cannot read /proc/self/exe";
    return result;
  }
  // Everything the child needs is built here: between fork and exec only
  // async-signal-safe calls are allowed (other threads may hold locks).
  std::vector<std::string> vars;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string var(*e);
    if (!env.count(var.substr(0, var.find('=')))) vars.push_back(var);
  }
  for (const auto& [name, value] : env) vars.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (auto& var : vars) envp.push_back(var.data());
  envp.push_back(nullptr);
  std::string filter = "--gtest_filter=" + gtest_filter;
  char* argv[] = {self.data(), filter.data(), nullptr};

  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) {
    result.output = "pipe failed";
    return result;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(pipe_fds[1], 1);
    ::dup2(pipe_fds[1], 2);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    ::execve(self.data(), argv, envp.data());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  std::array<char, 4096> buffer{};
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer.data(), buffer.size())) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    result.output.append(buffer.data(), static_cast<std::size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  if (pid > 0 && ::waitpid(pid, &status, 0) == pid) {
    if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  }
  return result;
}

// In a child test: whether this process is the child `run_this_test` made
// for `role` (the variable XYLEM_TEST_CHILD holds it).
inline bool is_child(const char* role) {
  const char* value = std::getenv("XYLEM_TEST_CHILD");
  return value != nullptr && std::strcmp(value, role) == 0;
}

}  // namespace xylem_test
