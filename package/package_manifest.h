#pragma once
// manifest.json: the marker `autotune-loop export` leaves in every package it writes,
// listing each file it wrote (package-relative path, size, CRC-32). It is what lets a later
// export --replace tell "a package I wrote, unchanged" from anything else at --out: only
// a folder that holds exactly the listed files, with the listed sizes and checksums (and
// the folders that hold them), is ever replaced (docs/package.md, "Replacing a package").
// The runtime library does not need it: read_package reads packages with or without it.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace tilesmith {

inline constexpr const char* kManifestFileName = "manifest.json";
inline constexpr const char* kManifestSchema = "tilesmith.package_manifest/1";

struct ManifestFile {
  std::string path;  // package-relative, '/'-separated
  std::uint64_t bytes = 0;
  std::string crc32;  // 8 lowercase hex digits (zlib's crc32 of the contents)
};

struct PackageManifest {
  std::string created, tilesmith_version;
  std::vector<ManifestFile> files;  // sorted by path; the manifest itself is not listed
};

// zlib's CRC-32 of the bytes, as 8 lowercase hex digits (what `python3 -c "import zlib"`
// and `crc32 FILE` print).
std::string crc32_hex(std::string_view bytes);

// The manifest of a package about to be written: `files` maps package-relative paths to
// contents.
PackageManifest make_manifest(const std::map<std::string, std::string>& files, const std::string& created);
nlohmann::json manifest_to_json(const PackageManifest& manifest);

// What a folder at --out is, for export.
struct PackageFolderCheck {
  enum class Kind {
    kMissing,     // nothing there
    kEmpty,       // an empty folder
    kNotAFolder,  // a file (or something else) that is not a folder
    kIntact,      // a package with a manifest, holding exactly what it lists, unchanged
    kChanged,     // a package with a manifest whose files differ from it (`problems` says how)
    kNoManifest,  // a package without a manifest (an earlier tilesmith, or made by hand)
    kNotAPackage, // a folder with neither a manifest nor tuned.json
    kBadManifest, // a manifest that cannot be read (`problems` says why)
  };
  Kind kind = Kind::kMissing;
  PackageManifest manifest;           // kIntact, kChanged
  std::vector<std::string> problems;  // kChanged: "extra file X", "X changed since export", ...
};

// Reads DIR without changing anything. Symbolic links inside DIR are never followed (export
// writes none: one is an extra entry); DIR itself may be a link (what it resolves to is
// checked).
PackageFolderCheck check_package_folder(const std::filesystem::path& dir);

// Deletes what `manifest` lists under DIR (checked intact just before), the manifest, the
// folders that held them once empty, then DIR once empty. Never removes anything else:
// an entry that appeared meanwhile is left, with DIR, and named in the returned note.
std::string remove_listed_package(const std::filesystem::path& dir, const PackageManifest& manifest);

}  // namespace tilesmith
