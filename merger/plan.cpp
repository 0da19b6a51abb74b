#include "merger/plan.hpp"

#include "merger/base/bytes.hpp"
#include "merger/base/digest.hpp"
#include "merger/base/memory.hpp"
#include "merger/base/text.hpp"
#include "merger/format/label.hpp"
#include "merger/format/manifest.hpp"
#include "merger/format/record.hpp"
#include "merger/loader.hpp"
#include "merger/metadata.hpp"
#include "merger/verify.hpp"
#include "merger/version.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fnmatch.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <span>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace wm {

namespace {

std::string dirname(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

std::string basename(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// Extension modules and shared libraries: "x.so", "x.cpython-311-x86_64-linux-gnu.so",
// "libx.so.1.2", "x.pyd", "x.dylib".
bool is_native_name(const std::string& path) {
  std::string base = basename(path);
  if (base.ends_with(".pyd") || base.ends_with(".dylib") || base.ends_with(".dll")) return true;
  size_t so = base.find(".so");
  return so != std::string::npos && (so + 3 == base.size() || base[so + 3] == '.');
}

// Native code by content: an ELF file or a PE/COFF image.
bool is_native(const WheelFile& f) { return f.elf || f.pe; }

// A Windows library that is no extension module: "x.dll", any case.
bool is_windows_library(const std::string& path) {
  std::string base = basename(path);
  std::transform(base.begin(), base.end(), base.begin(), [](unsigned char c) { return std::tolower(c); });
  return base.ends_with(".dll");
}

bool is_gpu_code(const std::string& path) {
  return path.ends_with(".cubin") || path.ends_with(".fatbin") || path.ends_with(".ptx");
}

// An importable module: Python source or an extension module ("x.so", "x.cpython-311-...so",
// "x.pyd"), unless it is a "lib*.so" that names itself with a SONAME.
bool is_module_file(const std::string& path, const WheelFile& f) {
  if (path.ends_with(".py")) return true;
  if (!path.ends_with(".so") && !path.ends_with(".pyd")) return false;
  bool soname = f.elf_info && !f.elf_info->soname.empty();
  return !(basename(path).rfind("lib", 0) == 0 && soname);
}

// A private shared library: preloaded by full path so its SONAME satisfies DT_NEEDED.
bool is_private_library(const std::string& path, const WheelFile& f) {
  return !is_module_file(path, f) && f.elf_info && f.elf_info->shared_object && !f.elf_info->soname.empty();
}

// Strongly connected components of the graph `deps` (i -> its dependencies): comp[i] for each
// node; Tarjan's algorithm, iterative, O(nodes + edges).
std::vector<size_t> strongly_connected(const std::vector<std::vector<size_t>>& deps) {
  const size_t n = deps.size(), unset = SIZE_MAX;
  std::vector<size_t> index(n, unset), low(n, 0), comp(n, unset), stack;
  std::vector<bool> on_stack(n, false);
  std::vector<std::pair<size_t, size_t>> frames;  // (node, next edge to follow)
  size_t counter = 0, comps = 0;
  for (size_t root = 0; root < n; ++root) {
    if (index[root] != unset) continue;
    frames.emplace_back(root, 0);
    while (!frames.empty()) {
      auto& [v, edge] = frames.back();
      if (edge == 0 && index[v] == unset) {
        index[v] = low[v] = counter++;
        stack.push_back(v);
        on_stack[v] = true;
      }
      if (edge < deps[v].size()) {
        size_t w = deps[v][edge++];
        if (index[w] == unset)
          frames.emplace_back(w, 0);
        else if (on_stack[w])
          low[v] = std::min(low[v], index[w]);
        continue;
      }
      if (low[v] == index[v]) {
        size_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          comp[w] = comps;
        } while (w != v);
        ++comps;
      }
      size_t done = v;
      frames.pop_back();
      if (!frames.empty()) low[frames.back().first] = std::min(low[frames.back().first], low[done]);
    }
  }
  return comp;
}

}  // namespace

// Libraries in dependency order: each one after every library whose SONAME it needs (Kahn's
// algorithm, O(n log n + edges)); among libraries ready at once the given order decides. A
// cycle (which no order satisfies) is broken at its first library in the given order, and a
// library depending on a cycle waits for the whole cycle.
std::vector<size_t> preload_order(const std::vector<const ElfInfo*>& libs) {
  const size_t n = libs.size();
  std::unordered_map<std::string_view, std::vector<size_t>> by_soname;
  for (size_t i = 0; i < n; ++i) by_soname[libs[i]->soname].push_back(i);
  std::vector<std::vector<size_t>> deps(n);
  for (size_t i = 0; i < n; ++i) {
    std::set<size_t> found;
    for (const std::string& needed : libs[i]->needed) {
      auto it = by_soname.find(needed);
      if (it == by_soname.end()) continue;
      for (size_t d : it->second)
        if (d != i) found.insert(d);
    }
    deps[i].assign(found.begin(), found.end());
  }
  const std::vector<size_t> comp = strongly_connected(deps);
  const size_t comps = n == 0 ? 0 : *std::max_element(comp.begin(), comp.end()) + 1;
  std::vector<std::vector<size_t>> members(comps), dependents(n);
  std::vector<size_t> internal(n, 0), external(comps, 0), remaining(comps, 0);
  for (size_t i = 0; i < n; ++i) {
    members[comp[i]].push_back(i);
    ++remaining[comp[i]];
    for (size_t d : deps[i]) {
      dependents[d].push_back(i);
      ++(comp[d] == comp[i] ? internal[i] : external[comp[i]]);
    }
  }
  std::set<size_t> open, ready;  // libraries of components whose outside needs are placed; of those, the ready
  auto open_component = [&](size_t c) {
    for (size_t m : members[c]) {
      open.insert(m);
      if (internal[m] == 0) ready.insert(m);
    }
  };
  for (size_t c = 0; c < comps; ++c)
    if (external[c] == 0) open_component(c);
  std::vector<size_t> ordered;
  while (ordered.size() < n) {
    size_t i = ready.empty() ? *open.begin() : *ready.begin();  // else: a cycle, broken here
    ready.erase(i);
    open.erase(i);
    ordered.push_back(i);
    for (size_t dep : dependents[i])
      if (comp[dep] == comp[i] && open.count(dep) && --internal[dep] == 0) ready.insert(dep);
    if (--remaining[comp[i]] > 0) continue;
    // The component is complete: what depends on it from outside may go.
    for (size_t m : members[comp[i]])
      for (size_t dep : dependents[m])
        if (comp[dep] != comp[i] && --external[comp[dep]] == 0) open_component(comp[dep]);
  }
  return ordered;
}

namespace {

// Per path, the file each build has (nullptr where it has none), builds in label order.
using PathRow = std::span<const WheelFile* const>;

// Every path of every build and its row, sorted by path: keys and rows in two flat arrays (a
// key's row is `builds` pointers), built by sorting what add() collected. Keys are views: of
// the inputs' paths, or of Planner::key_storage where a path is renamed.
class PathTable {
 public:
  void reserve(size_t files) { added_.reserve(files); }
  void add(std::string_view key, size_t build, const WheelFile* file) {
    added_.push_back({key, static_cast<uint32_t>(build), static_cast<uint32_t>(added_.size()), file});
  }
  // Sorts what was added into the table (a build's second file of one key replaces its first).
  void seal(size_t builds) {
    builds_ = builds;
    std::sort(added_.begin(), added_.end(),
              [](const Added& a, const Added& b) { return a.key != b.key ? a.key < b.key : a.order < b.order; });
    size_t keys = 0;
    for (size_t i = 0; i < added_.size(); ++i) keys += i == 0 || added_[i].key != added_[i - 1].key;
    keys_.reserve(keys);
    rows_.reserve(keys * builds);
    for (size_t i = 0; i < added_.size(); ++i) {
      if (i == 0 || added_[i].key != added_[i - 1].key) {
        keys_.push_back(added_[i].key);
        rows_.resize(rows_.size() + builds, nullptr);
      }
      rows_[rows_.size() - builds + added_[i].build] = added_[i].file;
    }
    std::vector<Added>().swap(added_);
  }
  size_t size() const { return keys_.size(); }
  std::string_view key(size_t i) const { return keys_[i]; }
  PathRow row(size_t i) const { return PathRow(rows_).subspan(i * builds_, builds_); }
  // The first key not below `key`.
  size_t lower_bound(std::string_view key) const {
    return static_cast<size_t>(std::lower_bound(keys_.begin(), keys_.end(), key) - keys_.begin());
  }
  bool contains(std::string_view key) const {
    size_t i = lower_bound(key);
    return i < size() && keys_[i] == key;
  }
  PathRow at(std::string_view key) const {
    size_t i = lower_bound(key);
    if (i == size() || keys_[i] != key) throw std::out_of_range("no such path: " + std::string(key));
    return row(i);
  }

  struct Iterator {
    const PathTable* table;
    size_t i;
    std::pair<std::string_view, PathRow> operator*() const { return {table->key(i), table->row(i)}; }
    Iterator& operator++() {
      ++i;
      return *this;
    }
    bool operator!=(const Iterator& o) const { return i != o.i; }
  };
  Iterator begin() const { return {this, 0}; }
  Iterator end() const { return {this, size()}; }

 private:
  struct Added {
    std::string_view key;
    uint32_t build, order;  // order: of addition
    const WheelFile* file;
  };
  std::vector<Added> added_;
  std::vector<std::string_view> keys_;
  std::vector<const WheelFile*> rows_;
  size_t builds_ = 0;
};

// One merge being planned: the inputs, what the passes have decided so far, and the problems
// found. Each pass is a member function below; plan_merge runs them in order.
struct Planner {
  Planner(std::span<const Wheel> inputs_, const MergeOptions& options_, Problems& problems_)
      : inputs(inputs_), options(options_), problems(problems_) {}

  std::span<const Wheel> inputs;
  const MergeOptions& options;
  Problems& problems;
  std::vector<size_t> order;  // indices into `inputs`, in label order: "build i" below
  std::string all_inputs;     // every input's name, for problems about the merge as a whole
  MergePlan plan;
  WheelName out_name;
  std::string data_dir;                 // the merged wheel's .data directory
  std::deque<std::string> key_storage;  // the path tables' keys that are no input's path
  PathTable payload, dist_info;         // dist_info keyed by the path inside the directory
  std::vector<PlannedMember> members;   // payload, in no particular order until the end
  std::vector<PlannedMember> dist_members;
  std::optional<MergedMetadata> metadata;
  std::map<std::string, std::vector<const VariantFile*>> by_package;  // package dir -> its variant files
  std::vector<const VariantFile*> outside;                            // private libraries outside every package
  std::set<std::string, std::less<>> patched_inits;  // __init__.py files replaced by their patched text

  size_t builds() const { return order.size(); }
  const Wheel& build(size_t i) const { return inputs[order[i]]; }
  const VariantLabel& label(size_t i) const { return plan.labels[i]; }
  const Wheel& first() const { return build(0); }

  // A generated member: its path and content kept in the plan's text.
  PlannedMember generated(std::string_view path, std::string content) {
    PlannedMember m;
    m.path = plan.text->paths.add(path);
    m.size = content.size();
    m.sha256 = sha256_of(as_bytes(content));
    m.content = plan.text->contents.emplace_back(std::move(content));
    return m;
  }
  PlannedMember copied(std::string_view path, size_t i, const WheelFile& f) {
    PlannedMember m;
    m.path = plan.text->paths.add(path);
    m.input = static_cast<uint32_t>(order[i]);
    m.entry = f.entry;
    m.executable = f.executable;
    m.size = f.size;
    m.sha256 = f.sha256;
    return m;
  }
  bool same_everywhere(const PathRow& row) const {
    return std::all_of(row.begin(), row.end(), [&](const WheelFile* f) {
      return f && f->sha256 == row.front()->sha256 && f->size == row.front()->size;
    });
  }
  // A path that differs between builds where it must not, with what each build has.
  void conflict(const std::string& path, const PathRow& row, std::string what) {
    std::vector<std::string> found;
    for (size_t i = 0; i < builds(); ++i)
      found.push_back(fmt::format(
          "{} ({}): {}", label(i).str(), build(i).display,
          row[i] ? fmt::format("sha256={}, {} bytes", base64url_nopad(*row[i]->sha256), row[i]->size) : "absent"));
    problems.push_back({ProblemKind::conflict, all_inputs, path, std::move(what), "the same bytes in every build",
                        fmt::format("{}", fmt::join(found, "; "))});
  }
  const WheelFile* file_of(const VariantFile& v) const {
    const PathRow& row = payload.at(v.original);
    for (size_t i = 0; i < builds(); ++i)
      if (label(i) == v.label) return row[i];
    return nullptr;
  }
  // Where import names start in `path`: where its site-packages path (site_packages_path)
  // begins; nullopt for the .data keys that install elsewhere and hold no packages.
  static std::optional<size_t> import_root(std::string_view path) {
    auto installed = site_packages_path(path);
    if (!installed) return std::nullopt;
    return path.size() - installed->size();
  }
  // The outermost regular package above `path` (a directory with an __init__.py every build
  // shares), or empty. Linear in the path's length: its directories are looked up one segment
  // at a time in `packages`, a tree of the directories above every shared __init__.py.
  std::string package_of(const std::string& path) const {
    auto root = import_root(path);
    if (!root) return {};
    size_t node = 0, start = 0, at;
    while ((at = path.find('/', start)) != std::string::npos) {
      auto it = packages.children.find(std::pair(node, std::string_view(path).substr(start, at - start)));
      if (it == packages.children.end()) return {};
      node = it->second;
      if (at > *root && packages.is_package[node]) return path.substr(0, at);
      start = at + 1;
    }
    return {};
  }
  struct PackageTree {
    struct Hash {
      size_t operator()(const std::pair<size_t, std::string_view>& k) const {
        return std::hash<std::string_view>()(k.second) * 31 + k.first;
      }
    };
    std::unordered_map<std::pair<size_t, std::string_view>, size_t, Hash> children;  // (node, segment) -> node
    std::vector<bool> is_package{false};                                             // node 0 is the wheel's root
  } packages;
  void build_package_tree();

  bool order_by_label();
  std::string project_name(const Wheel& w) const;
  bool check_one_build();
  bool build_path_tables();
  void classify_payload();
  // The path tables go once the members are planned: the last passes (collisions, RECORD) look
  // at the members alone, and the tables are most of the planner's memory beside them.
  void drop_path_tables() {
    payload = PathTable();
    dist_info = PathTable();
  }
  void carry_dist_info();
  void group_by_package();
  void add_loaders();
  LoaderManifest manifest_for(const std::string& package, const std::vector<const VariantFile*>& files) const;
  void check_collisions();
  void finish_dist_info();
};

// Label order makes the plan independent of the order inputs were given in. False, with a
// problem for each, where inputs carry no label (read_inputs gives every input one).
bool Planner::order_by_label() {
  const size_t before = problems.size();
  for (const Wheel& w : inputs)
    if (!w.label)
      problems.push_back({ProblemKind::usage, w.path, {}, "no variant label", std::string(kLabelForms), "none"});
  if (problems.size() != before) return false;
  for (size_t i = 0; i < inputs.size(); ++i) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return *inputs[a].label < *inputs[b].label; });
  std::vector<std::string> displays;
  for (size_t i = 0; i < builds(); ++i) displays.push_back(build(i).display);
  all_inputs = fmt::format("{}", fmt::join(displays, ", "));
  for (size_t i = 0; i < builds(); ++i) plan.labels.push_back(*build(i).label);
  return true;
}

// The project an input is a build of: its normalized name, with --name less the CUDA suffix
// ("cupy-cuda12x" is a build of "cupy").
std::string Planner::project_name(const Wheel& w) const {
  auto suffix = options.name.empty() ? std::nullopt : name_suffix_label(w.name.name);
  return suffix ? suffix->base : normalize_name(w.name.name);
}

// The builds must be of one project, version and interpreter ABI, for the same platforms;
// names the merged wheel and its directories.
bool Planner::check_one_build() {
  const size_t before = problems.size();
  const Wheel& first = this->first();
  auto differ = [&](const Wheel& w, std::string what, std::string mine, std::string theirs) {
    problems.push_back({ProblemKind::invalid_input,
                        w.display,
                        {},
                        std::move(what),
                        std::move(theirs) + " (as " + first.display + ")",
                        std::move(mine)});
  };
  auto sorted = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return fmt::format("{}", fmt::join(v, "."));
  };
  std::vector<std::vector<std::string>> platforms;
  for (size_t i = 0; i < builds(); ++i) {
    const Wheel& w = build(i);
    platforms.push_back(w.name.platform);
    auto suffix = options.name.empty() ? std::nullopt : name_suffix_label(w.name.name);
    if (suffix && suffix->label != label(i))
      problems.push_back({ProblemKind::invalid_input,
                          w.display,
                          {},
                          "variant label contradicts the CUDA major of the name",
                          fmt::format("{} (from the name {})", suffix->label.str(), w.name.name),
                          label(i).str()});
    if (i == 0) continue;
    if (options.name.empty() && normalize_name(w.name.name) != normalize_name(first.name.name))
      problems.push_back({ProblemKind::invalid_input,
                          w.display,
                          {},
                          "different distribution name",
                          fmt::format("{} (as {}), or --name NAME to merge distributions of different names into NAME",
                                      first.name.name, first.display),
                          w.name.name});
    else if (!options.name.empty() && project_name(w) != project_name(first))
      differ(w, "different distribution name without its CUDA suffix", project_name(w), project_name(first));
    if (w.base_version() != first.base_version())
      differ(w, "different version (after removing the +cuNN label)", w.base_version(), first.base_version());
    if (w.name.build != first.name.build) differ(w, "different build tag", w.name.build, first.name.build);
    if (sorted(w.name.python) != sorted(first.name.python))
      differ(w, "different python tags", sorted(w.name.python), sorted(first.name.python));
    if (sorted(w.name.abi) != sorted(first.name.abi))
      differ(w, "different abi tags", sorted(w.name.abi), sorted(first.name.abi));
    for (const char* key : {"Root-Is-Purelib"}) {
      std::string mine = w.wheel_fields.one(key).value_or(""), theirs = first.wheel_fields.one(key).value_or("");
      if (mine != theirs) differ(w, fmt::format("different {} in WHEEL", key), mine, theirs);
    }
    std::string mine = w.metadata.one("Metadata-Version").value_or(""),
                theirs = first.metadata.one("Metadata-Version").value_or("");
    if (mine != theirs) differ(w, "different Metadata-Version", mine, theirs);
  }
  std::string why;
  auto platform_tags = merge_platforms(platforms, why);
  if (!platform_tags)
    problems.push_back({ProblemKind::invalid_input,
                        all_inputs,
                        {},
                        "different operating systems or architectures",
                        "the same in every build",
                        why});
  if (problems.size() != before) return false;

  out_name = first.name;
  out_name.name = normalize_name(options.name.empty() ? first.name.name : options.name);
  out_name.version = first.base_version();
  out_name.platform = *platform_tags;
  out_name.suffix_label.reset();
  plan.filename = out_name.filename();
  plan.tags = out_name.expanded_tags();
  plan.dist_info = out_name.name + "-" + out_name.version + ".dist-info";
  data_dir = out_name.name + "-" + out_name.version + ".data";
  return true;
}

// Every path of every build, the payload and the dist-info apart (it is rebuilt). Paths of
// different builds that would be one file (or a file and a directory) where the wheel is
// installed are refused: "pkg/\u00e9.py" in one build and "pkg/e\u0301.py" in the other.
bool Planner::build_path_tables() {
  size_t files = 0;
  for (const Wheel& w : inputs) files += w.files.size();
  payload.reserve(files);  // a few more than it gets: the dist-info's files
  for (size_t i = 0; i < builds(); ++i) {
    const Wheel& w = build(i);
    const std::string dist_info_dir = w.dist_info + "/", data_dir_prefix = w.data_dir + "/";
    for (const WheelFile& f : w.files) {
      bool in_dist_info = f.path.starts_with(dist_info_dir);
      bool in_data = !w.data_dir.empty() && f.path.starts_with(data_dir_prefix);
      PathTable& table = in_dist_info ? dist_info : payload;
      // The .data directory is named with each build's version; the merged one with the merged version.
      std::string_view key =
          in_dist_info ? std::string_view(f.path).substr(w.dist_info.size() + 1)
          : in_data
              ? std::string_view(key_storage.emplace_back(data_dir + std::string(f.path.substr(w.data_dir.size()))))
              : std::string_view(f.path);
      table.add(key, i, &f);
    }
  }
  payload.seal(builds());
  dist_info.seal(builds());
  release_free_memory();  // what sealing sorted, before the members are allocated
  const size_t before = problems.size();
  std::vector<std::string_view> names;
  names.reserve(payload.size());
  for (const auto& [path, row] : payload) names.push_back(path);
  for (const NameClash& clash : find_name_clashes(names))
    problems.push_back(clash_problem(clash, names, ProblemKind::conflict, all_inputs, "across builds"));
  return problems.size() == before;
}

// Each payload path is shared (the same bytes in every build: stored once), a variant (native
// or GPU code, or matched by --variant-file: stored once per build under a labelled name), or
// a conflict.
void Planner::classify_payload() {
  auto matches_glob = [&](const std::string& path) {
    return std::any_of(options.variant_globs.begin(), options.variant_globs.end(),
                       [&](const std::string& g) { return fnmatch(g.c_str(), path.c_str(), 0) == 0; });
  };
  // A labelled name must not exist already: as a payload path (the table answers) or as a
  // labelled name given so far.
  std::unordered_set<std::string> labelled_taken;
  // Members, allocated once: one per shared path, one per build of each other path, a loader
  // per package at most, the dist-info's files and the three generated ones.
  size_t expected = dist_info.size() * builds() + 3;
  for (const auto& [path, row] : payload)
    expected += (same_everywhere(row) ? 1 : builds()) + (path == "__init__.py" || path.ends_with("/__init__.py"));
  members.reserve(expected);
  for (const auto& [key, row] : payload) {
    const std::string path(key);
    if (same_everywhere(row)) {
      members.push_back(copied(path, 0, *row.front()));
      for (const WheelFile* f : row) members.back().executable |= f->executable;
      ++plan.shared_files;
      // One build: its extension modules go through the loader, under their own names.
      if (builds() == 1 && options.single_build_loader && is_module_file(path, *row.front()) &&
          !path.ends_with(".py") && (is_native(*row.front()) || is_native_name(path)))
        plan.variant_files.push_back({label(0), path, path});
      continue;
    }
    // Windows finds a DLL an extension module imports by its file name: a labelled copy
    // (x.cu12.dll) matches no importer, and the loader preloads libraries the ELF way only. A DLL
    // of one build alone (delvewheel names its copies by their hash: msvcp140-<hash>.dll) keeps
    // its name, which no other build's file has; one name with other bytes per build is refused.
    if (is_windows_library(path)) {
      const auto present = std::count_if(row.begin(), row.end(), [](const WheelFile* f) { return f != nullptr; });
      if (present == 1) {
        const size_t i = static_cast<size_t>(
            std::find_if(row.begin(), row.end(), [](const WheelFile* f) { return f; }) - row.begin());
        members.push_back(copied(path, i, *row[i]));
        plan.variant_files.push_back({label(i), path, path});
        continue;
      }
      conflict(path, row,
               "a DLL that differs between builds: Windows would not find the selected build's copy under a "
               "labelled name (per-build DLLs of one name on Windows are not supported yet)");
      continue;
    }
    bool native = std::any_of(row.begin(), row.end(), [](const WheelFile* f) { return f && is_native(*f); });
    if (!(native || is_native_name(path) || is_gpu_code(path) || matches_glob(path))) {
      conflict(path, row, "differs between builds and is not native or GPU code (pass --variant-file to allow)");
      continue;
    }
    // A data file the package opens by its path (CuPy's .data/_wheel.json) is no longer there:
    // only the loader's path() finds the selected build's copy.
    if (!native && !is_native_name(path) && !is_gpu_code(path) && !path.ends_with(".py"))
      plan.warnings.push_back(fmt::format(
          "{} differs per build and is stored under labelled names; code that opens it by its path no longer "
          "finds it, only the loader's path() does",
          path));
    for (size_t i = 0; i < builds(); ++i) {
      if (!row[i]) continue;
      std::string stored = labelled_path(path, label(i));
      if (std::string why = unsafe_name_reason(stored); !why.empty()) {
        conflict(stored, row, fmt::format("the labelled name of {} is not a safe name ({})", path, why));
        continue;
      }
      if (payload.contains(stored) || !labelled_taken.insert(stored).second) {
        conflict(stored, row, fmt::format("the labelled name of {} is already taken", path));
        continue;
      }
      members.push_back(copied(stored, i, *row[i]));
      plan.variant_files.push_back({label(i), path, stored});
    }
  }
}

// Dist-info: WHEEL, RECORD and METADATA are rebuilt (METADATA merged here); SBOMs may differ
// per build and are kept under labelled names; the rest must be the same everywhere.
void Planner::carry_dist_info() {
  for (const auto& [key, row] : dist_info) {
    const std::string rel(key);
    if (rel == "RECORD" || rel == "WHEEL" || rel == "METADATA") continue;
    const std::string path = plan.dist_info + "/" + rel;
    if (options.dist_info_files.count(rel)) {
      for (size_t i = 0; i < builds(); ++i)
        if (row[i])
          problems.push_back({ProblemKind::invalid_input, build(i).display, std::string(row[i]->path),
                              "the input already has a dist-info file the output generates",
                              "no " + rel + " (give each build as it was built, not a variant wheel)", rel});
      continue;
    }
    if (same_everywhere(row)) {
      dist_members.push_back(copied(path, 0, *row.front()));
    } else if (rel.rfind("sboms/", 0) == 0) {
      for (size_t i = 0; i < builds(); ++i)
        if (row[i]) dist_members.push_back(copied(labelled_path(path, label(i)), i, *row[i]));
    } else {
      conflict(first().dist_info + "/" + rel, row, "dist-info file differs between builds");
    }
  }
  std::vector<const Wheel*> wheels;
  for (size_t i = 0; i < builds(); ++i) wheels.push_back(&build(i));
  metadata = merge_metadata(wheels, out_name.version, options.name, problems);
  for (const Wheel* w : wheels) plan.warnings.insert(plan.warnings.end(), w->warnings.begin(), w->warnings.end());
}

// The directories of every __init__.py all builds share, as a tree of path segments (views
// into the payload table's keys, which outlive the planner's passes).
void Planner::build_package_tree() {
  for (const auto& [path, row] : payload) {
    if (!(path == "__init__.py" || path.ends_with("/__init__.py")) || !same_everywhere(row)) continue;
    size_t node = 0, start = 0, at;
    while ((at = path.find('/', start)) != std::string::npos) {
      auto [it, fresh] = packages.children.try_emplace(
          std::pair(node, std::string_view(path).substr(start, at - start)), packages.is_package.size());
      if (fresh) packages.is_package.push_back(false);
      node = it->second;
      start = at + 1;
    }
    packages.is_package[node] = true;
  }
}

// Each variant file belongs to the outermost regular package above it, whose loader loads it;
// private libraries outside every package are preloaded by every package's loader.
void Planner::group_by_package() {
  build_package_tree();
  for (const VariantFile& v : plan.variant_files) {
    std::string package = package_of(v.original);
    if (!package.empty()) {
      by_package[package].push_back(&v);
    } else if (!v.labelled()) {
      // One build's top-level extension module: imported as it always was.
    } else if (is_private_library(v.original, *file_of(v)) && site_packages_path(v.original)) {
      outside.push_back(&v);
    } else {
      problems.push_back({ProblemKind::conflict, all_inputs, v.original,
                          "variant file has no package __init__.py above it to load it from",
                          "a file inside a regular package",
                          "no directory above it with an __init__.py shared by every build"});
    }
  }
  if (by_package.empty() && !outside.empty()) {
    for (const VariantFile* v : outside)
      problems.push_back({ProblemKind::conflict, all_inputs, v->original,
                          "private library differs between builds, but no package loads it",
                          "a package with variant extension modules", "none"});
  }
}

// What the loader of `package` (a directory) needs: per build, its modules, files and
// libraries to preload, with paths relative to the package.
LoaderManifest Planner::manifest_for(const std::string& package, const std::vector<const VariantFile*>& files) const {
  // Paths as the installed loader sees them: from its package's directory in site-packages,
  // where the root and .data's purelib and platlib meet.
  const std::string home = *site_packages_path(package + "/");  // "pkg/"
  const std::string up = [&] {
    std::string u;
    for (char c : home)
      if (c == '/') u += "../";
    return u;
  }();
  auto relative = [&](const std::string& path) {
    std::string installed = *site_packages_path(path);
    return installed.starts_with(home) ? installed.substr(home.size()) : up + installed;
  };
  std::string dotted = package.substr(*import_root(package + "/"));
  std::replace(dotted.begin(), dotted.end(), '/', '.');
  LoaderManifest manifest;
  manifest.package = dotted;
  manifest.distribution =
      options.name.empty() ? first().metadata.one("Name").value_or(first().name.name) : options.name;
  manifest.variants = plan.labels;
  // Inputs of one merge share a selector (merge_wheels refuses a mix).
  manifest.selector = plan.labels.front().selector();
  manifest.wheelmerge = std::string(kVersion);
  manifest.driver_fallback = options.driver_fallback;
  // Builds that require no cuda-bindings (CuPy) select by the CUDA runtime wheels and the driver.
  if (manifest.selector == Selector::cuda) manifest.cuda_bindings = !metadata || metadata->cuda_bindings;
  manifest.driver_fallback = options.driver_fallback || !manifest.cuda_bindings;
  // The extras that install what each build needs, so that the loader proposes only
  // `pip install "dist[...]"` commands that exist: the label when it is an extra (the build's
  // own requirements, its cuda-bindings among them), and for builds without cuda-bindings the
  // per-build extras that bring their CUDA runtime (CuPy's `ctk-cu12`).
  if (metadata) {
    for (const VariantLabel& label : metadata->label_extras) manifest.extras[label].push_back(label.str());
    if (!manifest.cuda_bindings)
      for (const auto& [label, extras] : metadata->runtime_extras)
        for (const std::string& extra : extras) manifest.extras[label].push_back(extra);
  }
  for (size_t i = 0; i < builds(); ++i) {
    const VariantLabel& label = this->label(i);
    BuildFiles& build = manifest.builds[label];
    // The GPU code of the build's files, by the path the loader finds them at.
    auto add_gpu_code = [&](const VariantFile& v) {
      if (auto code = spelled_gpu_code(this->build(i), v.original); !code.empty())
        build.gpu_code[relative(v.stored)] = std::move(code);
    };
    std::vector<std::pair<const VariantFile*, const ElfInfo*>> libraries;
    for (const VariantFile* v : files) {
      if (v->label != label) continue;
      const WheelFile* f = file_of(*v);
      std::string rel = relative(v->original);
      build.files[rel] = relative(v->stored);
      add_gpu_code(*v);
      if (is_private_library(v->original, *f)) {
        libraries.emplace_back(v, &*f->elf_info);
      } else if (is_module_file(v->original, *f)) {
        std::string module = dotted + "/" + rel.substr(0, rel.find('.', rel.rfind('/') + 1));
        std::replace(module.begin(), module.end(), '/', '.');
        // A subpackage's own __init__ is imported under the subpackage's name.
        if (module.ends_with(".__init__")) module.resize(module.size() - std::strlen(".__init__"));
        build.modules[module] = relative(v->stored);
      }
    }
    for (const VariantFile* v : outside)
      if (v->label == label) {
        libraries.emplace_back(v, &*file_of(*v)->elf_info);
        add_gpu_code(*v);
      }
    std::vector<const ElfInfo*> infos;
    for (const auto& library : libraries) infos.push_back(library.second);
    for (size_t i : preload_order(infos)) build.preload.push_back(relative(libraries[i].first->stored));
    if (auto info = options.build_info.find(label); info != options.build_info.end()) build.build_info = info->second;
  }
  return manifest;
}

// Per package: the loader with its manifest, and the package's __init__.py (shared, so taken
// from the first build) with the loader import put in.
void Planner::add_loaders() {
  for (const auto& [package, files] : by_package) {
    LoaderManifest manifest = manifest_for(package, files);
    plan.loader_packages.push_back(package);
    const std::string init_path = package + "/__init__.py";
    // The path in the input: under .data, named with the input's version.
    const WheelFile& init_file = *payload.at(init_path).front();
    auto init = first().init_sources.find(std::string(init_file.path));
    if (init == first().init_sources.end()) {
      problems.push_back({ProblemKind::invalid_input, first().display, std::string(init_file.path), "member too large",
                          fmt::format("at most {} bytes of __init__.py files in all", kMaxInitSources),
                          fmt::format("{} bytes", init_file.size)});
      continue;
    }
    std::string init_why;
    auto patched = inject_loader_import(init->second, init_why);
    if (!patched) {
      problems.push_back(
          {ProblemKind::conflict, first().display, init_path, "cannot place the loader import", {}, init_why});
      continue;
    }
    patched_inits.insert(init_path);
    members.push_back(generated(init_path, *patched));
    // Anything Python could import under the loader's or its rules module's name beside it
    // (loader_shadows; in the inputs, where the loader is not yet) would be imported instead of
    // what is written here: named in the inputs holding it.
    bool shadowed = false;
    for (const LoaderShadow& shadow : loader_shadows(package + "/")) {
      // Paths starting with the prefix sort together: look there, not through the whole table.
      const size_t at = payload.lower_bound(shadow.prefix);
      if (at >= payload.size() || !payload.key(at).starts_with(shadow.prefix)) continue;
      std::vector<std::string> holding;
      const PathRow row = payload.row(at);
      for (size_t b = 0; b < row.size(); ++b)
        if (row[b]) holding.push_back(build(b).display);
      // The inputs are wheels, but cannot be merged: a conflict.
      problems.push_back(
          {ProblemKind::conflict, fmt::format("{}", fmt::join(holding, ", ")), std::string(payload.key(at)),
           fmt::format("a file Python could import as {}, the name of the module wheelmerge writes", shadow.stem),
           fmt::format("no {} module, package or bytecode in the inputs", shadow.stem), "this file"});
      shadowed = true;
    }
    if (shadowed) continue;
    members.push_back(generated(package + "/" + std::string(kLoaderModule), render_loader(manifest)));
    members.push_back(
        generated(package + "/" + std::string(kRulesModule), render_rules(manifest.selector, manifest.package)));
  }
  std::erase_if(members, [&](const PlannedMember& m) { return m.input && patched_inits.count(m.path); });
}

// The merged names must stay distinct and of one kind wherever the wheel is unpacked (a
// labelled name may meet a directory, a name that differs only in case, or a labelled SBOM
// another SBOM's name), and wherever it is installed: the root, .data/purelib and
// .data/platlib all install into site-packages, so a labelled module or a loader under one
// may land on a file of the other.
void Planner::check_collisions() {
  const size_t before = problems.size();
  // Views of the members' paths (and of the three dist-info files generated later).
  std::vector<std::string_view> names;
  names.reserve(members.size() + dist_members.size());
  for (const auto* group : {&members, &dist_members})
    for (const PlannedMember& m : *group) names.push_back(m.path);
  for (const NameClash& clash : find_name_clashes(names))
    problems.push_back(clash_problem(clash, names, ProblemKind::conflict, all_inputs, "merged wheel"));
  if (problems.size() != before) return;
  std::vector<std::string_view> installed, archived;
  for (const PlannedMember& m : members) {
    auto root = import_root(m.path);
    if (!root) continue;  // scripts, headers, data: installed elsewhere
    installed.push_back(std::string_view(m.path).substr(*root));
    archived.push_back(m.path);
  }
  // The dist-info installs into site-packages too, with the three files generated later.
  std::vector<std::string> generated_files{plan.dist_info + "/WHEEL", plan.dist_info + "/METADATA",
                                           plan.dist_info + "/RECORD"};
  for (const auto& [rel, content] : options.dist_info_files) generated_files.push_back(plan.dist_info + "/" + rel);
  for (const PlannedMember& m : dist_members) archived.push_back(m.path);
  for (const std::string& generated : generated_files) archived.push_back(generated);
  installed.insert(installed.end(), archived.begin() + installed.size(), archived.end());
  for (const NameClash& clash : find_name_clashes(installed)) {
    bool directory = clash.kind == NameClash::Kind::file_and_directory;
    problems.push_back({ProblemKind::conflict, all_inputs, std::string(archived[clash.name]),
                        directory ? "merged wheel: installs where another member needs a directory"
                                  : "merged wheel: installs onto the same path as another member",
                        directory ? "one kind of entry per installed path" : "one member per installed path",
                        "another member, " + std::string(archived[clash.other])});
  }
  if (problems.size() != before) return;
  // `wheelmerge verify` takes a name carrying a label for a variant file no manifest lists: a
  // merge with loaders refuses other files so named (they would not be told apart).
  if (!plan.variant_files.empty()) {
    std::unordered_set<std::string> labels;       // as names spell them
    std::unordered_set<std::string_view> stored;  // views of plan.variant_files
    for (const VariantFile& v : plan.variant_files) {
      labels.insert(v.label.str());
      stored.insert(v.stored);
    }
    for (const PlannedMember& m : members) {
      if (stored.count(m.path) || !m.input) continue;
      if (std::string label = label_in_name(m.path, labels); !label.empty())
        problems.push_back(
            {ProblemKind::invalid_input, inputs[*m.input].display, std::string(m.path),
             "a file of every build is named like a variant file",
             "no variant label among the dot-separated pieces of its name",
             fmt::format("the label {} (wheelmerge verify would take it for a {} build file no loader lists)", label,
                         label)});
    }
  }
}

// WHEEL, METADATA and RECORD; the payload sorted by bytes, then the dist-info, RECORD last.
void Planner::finish_dist_info() {
  std::string wheel = fmt::format("Wheel-Version: 1.0\nGenerator: wheelmerge {}\nRoot-Is-Purelib: false\n", kVersion);
  for (const std::string& tag : plan.tags) wheel += "Tag: " + tag + "\n";
  if (!out_name.build.empty()) wheel += "Build: " + out_name.build + "\n";
  dist_members.push_back(generated(plan.dist_info + "/WHEEL", wheel));
  dist_members.push_back(generated(plan.dist_info + "/METADATA", metadata->text));
  for (const auto& [rel, content] : options.dist_info_files)
    dist_members.push_back(generated(plan.dist_info + "/" + rel, content));
  auto by_path = [](const PlannedMember& a, const PlannedMember& b) { return a.path < b.path; };
  std::sort(members.begin(), members.end(), by_path);
  std::sort(dist_members.begin(), dist_members.end(), by_path);
  members.insert(members.end(), std::make_move_iterator(dist_members.begin()),
                 std::make_move_iterator(dist_members.end()));
  dist_members.clear();
  const std::string record_path = plan.dist_info + "/RECORD";
  // RECORD's text is allocated once: a row is its path, its hash and size and five characters
  // more, or a little more where the path is quoted.
  size_t record_size = record_path.size() + 3;
  for (const PlannedMember& m : members) record_size += m.path.size() + 7 + 43 + std::to_string(m.size).size() + 3;
  std::string record;
  record.reserve(record_size);
  for (const PlannedMember& m : members)
    record += format_record_row({m.path, "sha256=" + base64url_nopad(*m.sha256), std::to_string(m.size)});
  record += format_record_row({record_path, "", ""});
  members.push_back(generated(record_path, std::move(record)));
  members.back().sha256.reset();
  plan.members = std::move(members);
}

}  // namespace

std::string labelled_path(const std::string& path, const VariantLabel& label) {
  std::string dir = dirname(path);
  std::string base = basename(path);
  size_t dot = base.find('.', 1);  // a leading dot belongs to the stem
  std::string renamed =
      dot == std::string::npos ? base + "." + label.str() : base.substr(0, dot) + "." + label.str() + base.substr(dot);
  return dir.empty() ? renamed : dir + "/" + renamed;
}

std::optional<MergePlan> plan_merge(std::span<const Wheel> inputs, const MergeOptions& options, Problems& problems,
                                    const std::function<void()>& files_read) {
  const size_t before = problems.size();
  Planner p(inputs, options, problems);
  if (!p.order_by_label() || !p.check_one_build() || !p.build_path_tables()) return std::nullopt;
  p.classify_payload();
  p.carry_dist_info();
  p.group_by_package();
  p.add_loaders();
  p.drop_path_tables();  // the last view of the inputs' files: the members carry what they need
  if (files_read) files_read();
  p.check_collisions();
  if (problems.size() != before || !p.metadata) return std::nullopt;
  p.finish_dist_info();
  if (p.plan.loader_packages.empty() && inputs.size() == 1 && options.single_build_loader)
    p.plan.warnings.push_back(
        fmt::format("{}: one build, with no extension module in a package, so the wheel has no loader", p.all_inputs));
  else if (p.plan.variant_files.empty() &&
           inputs.size() > 1)  // two builds of one file, or a build that ignored its toolkit
    p.plan.warnings.push_back(
        fmt::format("{}: no file outside the dist-info differs between the builds, so the merged wheel has no loader",
                    p.all_inputs));
  return std::move(p.plan);
}

}  // namespace wm
