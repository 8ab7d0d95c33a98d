#include "lumen/backend/cpu/compiler.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "lumen/backend/cpu/isa.h"
#include "lumen/core/error.h"

namespace lumen::cpu {

namespace {

constexpr const char* kFormat = "lumen-object-v1";

std::string compiler() {
  const char* c = std::getenv("LUMEN_CXX");
  return c && *c ? c : "g++";
}

void make_dirs(const std::string& path) {
  std::string partial;
  std::istringstream in(path);
  std::string part;
  if (!path.empty() && path[0] == '/') partial = "/";
  while (std::getline(in, part, '/')) {
    if (part.empty()) continue;
    partial += part + "/";
    if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) fail("cannot create directory ", partial);
  }
}

// Runs argv with stdout+stderr into `log`; returns the exit status.
int run(const std::vector<std::string>& argv, const std::string& log) {
  pid_t pid = fork();
  if (pid < 0) fail("cannot start ", argv[0]);
  if (pid == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) fail("waiting for ", argv[0], " failed");
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

bool exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && st.st_size > 0;
}

std::vector<std::string> split_flags(const std::string& flags) {
  std::vector<std::string> out;
  std::istringstream in(flags);
  std::string f;
  while (in >> f) out.push_back(f);
  return out;
}

}  // namespace

Library::~Library() {
  if (handle_) dlclose(handle_);
}

void* Library::symbol(const std::string& name) const {
  void* p = dlsym(handle_, name.c_str());
  if (!p) fail("generated object ", path_, " has no symbol ", name);
  return p;
}

std::string hash_hex(const std::string& text) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string cache_dir() {
  if (const char* d = std::getenv("LUMEN_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/lumen";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/lumen";
  return "/tmp/lumen-cache";
}

const std::string& compiler_version() {
  static const std::string version = [] {
    std::string log = "/tmp/lumen-cxx-version-" + std::to_string(getpid()) + ".txt";
    int status = run({compiler(), "--version"}, log);
    std::string text = read_file(log);
    std::remove(log.c_str());
    if (status != 0) fail("cannot run the C++ compiler '", compiler(), "' (install g++ or set LUMEN_CXX)");
    return text.substr(0, text.find('\n'));
  }();
  return version;
}

std::shared_ptr<Library> compile_and_load(const std::string& source, CompileInfo* info) {
  const Isa& isa = host_isa();
  std::string flags = "-std=c++17 -O2 -fPIC -shared -fwrapv -fno-math-errno -ffp-contract=fast " + isa.compiler_flags();
  std::string key = hash_hex(std::string(kFormat) + "\n" + compiler_version() + "\n" + flags + "\n" + source);
  std::string dir = cache_dir() + "/objects";
  make_dirs(dir);
  std::string object = dir + "/" + key + ".so";
  CompileInfo local;
  local.object_path = object;
  if (exists(object)) {
    local.cache_hit = true;
  } else {
    auto start = std::chrono::steady_clock::now();
    std::string tag = std::to_string(getpid()) + "-" + std::to_string(reinterpret_cast<uintptr_t>(&local));
    std::string src = dir + "/" + key + "." + tag + ".cpp";
    std::string tmp = dir + "/" + key + "." + tag + ".so.tmp";
    std::string log = dir + "/" + key + "." + tag + ".log";
    {
      std::ofstream f(src);
      f << source;
      if (!f.good()) fail("cannot write generated source to ", src);
    }
    std::vector<std::string> argv{compiler()};
    for (const std::string& f : split_flags(flags)) argv.push_back(f);
    argv.insert(argv.end(), {"-o", tmp, src});
    int status = run(argv, log);
    if (status != 0) {
      std::string text = read_file(log);
      std::remove(tmp.c_str());
      fail("compiling generated kernels failed (exit ", status, "); source kept at ", src, ":\n",
           text.substr(0, 4000));
    }
    if (std::rename(tmp.c_str(), object.c_str()) != 0) fail("cannot move ", tmp, " to ", object);
    std::remove(log.c_str());
    std::remove(src.c_str());
    local.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  void* handle = dlopen(object.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    // A damaged cache entry: rebuild it once.
    std::string why = dlerror();
    std::remove(object.c_str());
    if (local.cache_hit) return compile_and_load(source, info);
    fail("cannot load generated object ", object, ": ", why);
  }
  if (info) *info = local;
  return std::make_shared<Library>(handle, object);
}

}  // namespace lumen::cpu
