#include "lumen/backend/cpu/compiler.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <vector>

#include "lumen/backend/cpu/isa.h"
#include "lumen/core/error.h"
#include "lumen/core/file_bytes.h"

namespace lumen::cpu {

namespace {

constexpr const char* kFormat = "lumen-object-v2";

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

// Starts argv with stdout+stderr into `log`; returns the process id.
pid_t start(const std::vector<std::string>& argv, const std::string& log) {
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
  return pid;
}

// Waits for a process from start(); returns its exit status.
int finish(pid_t pid, const std::string& what) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) fail("waiting for ", what, " failed");
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int run(const std::vector<std::string>& argv, const std::string& log) { return finish(start(argv, log), argv[0]); }


bool exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && st.st_size > 0;
}

// The integrity record beside each object: the key it was built for, its size
// and a hash of its bytes. An object without a matching record (truncated,
// damaged, another kernel's, or a write interrupted before the record) is
// rebuilt, never loaded: loading a damaged object can crash the process.
std::string integrity_record(const std::string& key, const std::string& object_bytes) {
  return std::string(kFormat) + " " + key + " " + std::to_string(object_bytes.size()) + " " + hash_hex(object_bytes) + "\n";
}

bool object_is_intact(const std::string& object, const std::string& record, const std::string& key) {
  if (!exists(object) || !exists(record)) return false;
  return read_file_bytes(record) == integrity_record(key, read_file_bytes(object));
}


// Work files of a compile are named <key>.<pid>-<n>.*; those of processes
// that no longer run (a search killed mid-way) and are over ten minutes old
// are removed once per process.
void sweep_stale_work_files(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  time_t now = std::time(nullptr);
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    size_t dot = name.find('.'), dash = name.find('-', dot == std::string::npos ? 0 : dot);
    if (dot == std::string::npos || dash == std::string::npos || dash == dot + 1) continue;
    std::string pid_text = name.substr(dot + 1, dash - dot - 1);
    if (pid_text.find_first_not_of("0123456789") != std::string::npos || pid_text.size() > 9) continue;
    pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    if (pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH) continue;
    struct stat st {};
    std::string path = dir + "/" + name;
    if (stat(path.c_str(), &st) == 0 && now - st.st_mtime > 600) std::remove(path.c_str());
  }
  closedir(d);
}

bool writable_dir(const std::string& dir) {
  std::string probe = dir + "/.probe." + std::to_string(getpid());
  int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return false;
  close(fd);
  std::remove(probe.c_str());
  return true;
}

// The objects directory: the cache's, or (unwritable) a private temporary
// one, with a warning, so compilation still works.
std::string objects_dir() {
  static std::mutex mutex;
  static std::string chosen;
  std::lock_guard<std::mutex> lock(mutex);
  std::string wanted = cache_dir() + "/objects";
  if (chosen == wanted) return chosen;
  bool ok = true;
  try {
    make_dirs(wanted);
    ok = writable_dir(wanted);
  } catch (const Error&) {
    ok = false;
  }
  if (ok) {
    sweep_stale_work_files(wanted);
    chosen = wanted;
    return chosen;
  }
  static std::string fallback;
  if (fallback.empty()) {
    std::string pattern = "/tmp/lumen-objects-XXXXXX";
    if (!mkdtemp(pattern.data())) fail("the kernel cache ", wanted, " is not writable and no temporary directory can be made");
    fallback = pattern;
    std::cerr << "lumen: warning: the kernel cache " << wanted << " is not writable; compiled kernels go to " << fallback
              << " for this process (set LUMEN_CACHE_DIR to a writable directory)\n";
  }
  return fallback;
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
    std::string text = read_file_bytes(log);
    std::remove(log.c_str());
    if (status != 0) fail("cannot run the C++ compiler '", compiler(), "' (install g++ or set LUMEN_CXX)");
    return text.substr(0, text.find('\n'));
  }();
  return version;
}

std::shared_ptr<Library> compile_and_load(const std::string& source, CompileInfo* info) {
  return compile_and_load(std::vector<std::string>{source}, info);
}

std::shared_ptr<Library> compile_and_load(const std::vector<std::string>& parts, CompileInfo* info) {
  const Isa& isa = host_isa();
  std::string flags = "-std=c++17 -O2 -fPIC -fwrapv -fno-math-errno -ffp-contract=fast " + isa.compiler_flags();
  std::string all;
  for (const std::string& p : parts) all += p + "\n// ----\n";
  std::string key = hash_hex(std::string(kFormat) + "\n" + compiler_version() + "\n" + flags + "\n" + all);
  std::string dir = objects_dir();
  std::string object = dir + "/" + key + ".so", record = dir + "/" + key + ".sum";
  CompileInfo local;
  local.object_path = object;
  if (object_is_intact(object, record, key)) {
    local.cache_hit = true;
  } else {
    auto begin = std::chrono::steady_clock::now();
    std::string tag = dir + "/" + key + "." + std::to_string(getpid()) + "-" + std::to_string(reinterpret_cast<uintptr_t>(&local));
    std::string tmp = tag + ".so.tmp", log = tag + ".log";
    std::vector<std::string> sources, objects;
    for (size_t i = 0; i < parts.size(); ++i) {
      sources.push_back(tag + "." + std::to_string(i) + ".cpp");
      objects.push_back(tag + "." + std::to_string(i) + ".o");
      std::ofstream f(sources.back());
      f << parts[i];
      if (!f.good()) fail("cannot write generated source to ", sources.back());
    }
    auto cleanup = [&](bool keep_sources) {
      for (const std::string& o : objects) std::remove(o.c_str());
      for (size_t i = 0; i < parts.size(); ++i) std::remove((tag + "." + std::to_string(i) + ".log").c_str());
      if (!keep_sources) {
        for (const std::string& src : sources) std::remove(src.c_str());
      }
      std::remove(tmp.c_str());
      std::remove(log.c_str());
    };
    // Translation units compile in parallel; one link makes the shared object
    // (a single unit compiles straight to it).
    bool single = parts.size() == 1;
    std::vector<pid_t> pids;
    for (size_t i = 0; i < parts.size(); ++i) {
      std::vector<std::string> argv{compiler()};
      for (const std::string& f : split_flags(flags)) argv.push_back(f);
      if (single) {
        argv.insert(argv.end(), {"-shared", "-o", tmp, sources[i]});
      } else {
        argv.insert(argv.end(), {"-c", "-o", objects[i], sources[i]});
      }
      pids.push_back(start(argv, tag + "." + std::to_string(i) + ".log"));
    }
    std::string errors;
    for (size_t i = 0; i < pids.size(); ++i) {
      if (finish(pids[i], compiler()) != 0) errors += read_file_bytes(tag + "." + std::to_string(i) + ".log");
    }
    if (errors.empty() && !single) {
      std::vector<std::string> argv{compiler(), "-shared", "-o", tmp};
      argv.insert(argv.end(), objects.begin(), objects.end());
      if (run(argv, log) != 0) errors = read_file_bytes(log);
    }
    if (!errors.empty()) {
      cleanup(true);
      fail("compiling generated kernels failed; sources kept at ", tag, ".*.cpp:\n", errors.substr(0, 4000));
    }
    std::string sum = integrity_record(key, read_file_bytes(tmp));
    if (std::rename(tmp.c_str(), object.c_str()) != 0) fail("cannot move ", tmp, " to ", object);
    if (!write_file_atomically(record, sum)) fail("cannot write ", record);
    cleanup(false);
    local.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  }
  void* handle = dlopen(object.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    // Intact bytes that do not load (e.g. another process replaced the entry): rebuild once.
    std::string why = dlerror();
    std::remove(record.c_str());
    if (local.cache_hit) return compile_and_load(parts, info);
    fail("cannot load generated object ", object, ": ", why);
  }
  if (info) *info = local;
  return std::make_shared<Library>(handle, object);
}

}  // namespace lumen::cpu
