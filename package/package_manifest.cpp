#include "package/package_manifest.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "base/files.h"

namespace tilesmith {
namespace fs = std::filesystem;
using nlohmann::json;

std::string crc32_hex(std::string_view bytes) {
  uLong crc = ::crc32(0L, Z_NULL, 0);
  const auto* data = reinterpret_cast<const Bytef*>(bytes.data());
  std::size_t left = bytes.size();
  while (left > 0) {  // zlib takes uInt lengths
    const uInt n = static_cast<uInt>(std::min<std::size_t>(left, 1u << 30));
    crc = ::crc32(crc, data, n);
    data += n;
    left -= n;
  }
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08lx", static_cast<unsigned long>(crc & 0xffffffffUL));
  return buf;
}

PackageManifest make_manifest(const std::map<std::string, std::string>& files, const std::string& created) {
  PackageManifest m;
  m.created = created;
  m.tilesmith_version = TILESMITH_VERSION;
  for (const auto& [path, contents] : files) m.files.push_back({path, contents.size(), crc32_hex(contents)});
  return m;
}

json manifest_to_json(const PackageManifest& m) {
  json files = json::array();
  for (const auto& f : m.files) files.push_back({{"path", f.path}, {"bytes", f.bytes}, {"crc32", f.crc32}});
  return {{"schema", kManifestSchema},
          {"written_by", "autotune-loop export"},
          {"tilesmith_version", m.tilesmith_version},
          {"created", m.created},
          {"note", "every file autotune-loop export wrote here; export --replace replaces this folder only while it "
                   "holds exactly these files, unchanged"},
          {"files", files}};
}

namespace {

using Kind = PackageFolderCheck::Kind;

// A listed path export could have written: relative, no "..", not the manifest itself.
bool safe_relative(const std::string& rel) {
  if (rel.empty()) return false;
  const fs::path p(rel);
  if (p.is_absolute() || p.has_root_name()) return false;
  for (const auto& part : p)
    if (part == ".." || part == "." || part.empty()) return false;
  return rel != kManifestFileName;
}

Result<PackageManifest> parse_manifest(const fs::path& path) {
  TS_ASSIGN_OR_RETURN(std::string text, read_file(path));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::parse_error("it is not valid JSON");
  if (j.value("schema", std::string()) != kManifestSchema)
    return Status::parse_error("its schema is not " + std::string(kManifestSchema));
  if (!j.contains("files") || !j["files"].is_array()) return Status::parse_error("it has no \"files\" list");
  PackageManifest m;
  m.created = j.value("created", std::string());
  m.tilesmith_version = j.value("tilesmith_version", std::string());
  std::set<std::string> seen;
  for (const auto& f : j["files"]) {
    if (!f.is_object() || !f.contains("path") || !f["path"].is_string() || !f.contains("bytes") ||
        !f["bytes"].is_number_unsigned() || !f.contains("crc32") || !f["crc32"].is_string())
      return Status::parse_error("an entry of \"files\" lacks path, bytes or crc32");
    ManifestFile mf{f["path"].get<std::string>(), f["bytes"].get<std::uint64_t>(), f["crc32"].get<std::string>()};
    if (!safe_relative(mf.path)) return Status::parse_error("it lists \"" + mf.path + "\", which export never writes");
    if (!seen.insert(mf.path).second) return Status::parse_error("it lists \"" + mf.path + "\" twice");
    m.files.push_back(std::move(mf));
  }
  return m;
}

}  // namespace

PackageFolderCheck check_package_folder(const fs::path& dir) {
  PackageFolderCheck c;
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (!fs::exists(st)) return c;  // kMissing
  if (!fs::is_directory(st)) {
    c.kind = Kind::kNotAFolder;
    return c;
  }
  if (fs::is_empty(dir, ec) && !ec) {
    c.kind = Kind::kEmpty;
    return c;
  }
  const fs::path manifest_path = dir / kManifestFileName;
  const fs::file_status mst = fs::symlink_status(manifest_path, ec);
  if (!fs::exists(mst)) {
    c.kind = fs::exists(fs::symlink_status(dir / "tuned.json", ec)) ? Kind::kNoManifest : Kind::kNotAPackage;
    return c;
  }
  if (!fs::is_regular_file(mst)) {
    c.kind = Kind::kBadManifest;
    c.problems.push_back(std::string(kManifestFileName) + " is not a regular file");
    return c;
  }
  auto m = parse_manifest(manifest_path);
  if (!m.ok()) {
    c.kind = Kind::kBadManifest;
    c.problems.push_back(std::string(kManifestFileName) + " cannot be used: " + m.status().message());
    return c;
  }
  c.manifest = std::move(m).value();

  std::map<std::string, const ManifestFile*> listed;
  std::set<std::string> listed_folders;
  for (const auto& f : c.manifest.files) {
    listed[f.path] = &f;
    for (fs::path q = fs::path(f.path).parent_path(); !q.empty(); q = q.parent_path())
      listed_folders.insert(q.generic_string());
  }
  std::set<std::string> found;  // every entry met, listed or not
  // Links are never followed: a link is an entry of its own, and export writes none.
  fs::recursive_directory_iterator it(dir, fs::directory_options::none, ec), end;
  if (ec) c.problems.push_back("cannot list the folder: " + ec.message());
  for (; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    const std::string rel = p.lexically_relative(dir).generic_string();
    if (rel == kManifestFileName) continue;
    found.insert(rel);
    const fs::file_status s = it->symlink_status(ec);
    if (ec) {
      c.problems.push_back("cannot read " + rel + ": " + ec.message());
      ec.clear();
      continue;
    }
    if (fs::is_symlink(s)) {
      c.problems.push_back("extra entry " + rel + " (a symbolic link; export writes none)");
    } else if (fs::is_directory(s)) {
      if (!listed_folders.count(rel)) c.problems.push_back("extra folder " + rel);
    } else if (!fs::is_regular_file(s)) {
      c.problems.push_back("extra entry " + rel + " (not a regular file)");
    } else if (auto l = listed.find(rel); l == listed.end()) {
      c.problems.push_back("extra file " + rel);
    } else {
      std::error_code size_ec;
      const auto bytes = fs::file_size(p, size_ec);
      auto contents = size_ec || bytes != l->second->bytes ? Result<std::string>(Status::io_error("size"))
                                                          : read_file(p);
      if (!contents.ok() || crc32_hex(*contents) != l->second->crc32)
        c.problems.push_back(rel + " changed since export");
    }
  }
  if (ec) c.problems.push_back("cannot list the folder: " + ec.message());
  for (const auto& f : c.manifest.files)
    if (!found.count(f.path)) c.problems.push_back(f.path + " is missing");
  c.kind = c.problems.empty() ? Kind::kIntact : Kind::kChanged;
  return c;
}

std::string remove_listed_package(const fs::path& dir, const PackageManifest& manifest) {
  std::error_code ec;
  std::set<fs::path> folders;
  for (const auto& f : manifest.files) {
    fs::remove(dir / f.path, ec);
    for (fs::path q = fs::path(f.path).parent_path(); !q.empty(); q = q.parent_path()) folders.insert(q);
  }
  fs::remove(dir / kManifestFileName, ec);
  std::vector<fs::path> deepest_first(folders.begin(), folders.end());
  std::stable_sort(deepest_first.begin(), deepest_first.end(), [](const fs::path& a, const fs::path& b) {
    return std::distance(a.begin(), a.end()) > std::distance(b.begin(), b.end());
  });
  for (const auto& q : deepest_first) fs::remove(dir / q, ec);  // only removes an empty folder
  fs::remove(dir, ec);
  if (fs::exists(fs::symlink_status(dir, ec)))
    return "left " + dir.string() + " in place: it holds entries export did not write (they appeared during the "
           "export); look at them and remove it yourself";
  return {};
}

}  // namespace tilesmith
