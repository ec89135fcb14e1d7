#include "registry/template_library.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string_view>

#include "base/files.h"

namespace tilesmith {

// Defined in the file cmake/embed_files.cmake generates from kernels/.
const std::map<std::string, std::string_view>& embedded_files();

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

Result<TemplateLibrary> TemplateLibrary::embedded() {
  TemplateLibrary lib;
  const auto& files = embedded_files();
  auto headers = std::make_shared<KernelHeaders>();
  for (const auto& [name, text] : files)
    if (ends_with(name, ".h")) headers->emplace_back(name, std::string(text));
  for (const auto& [name, text] : files) {
    if (!ends_with(name, ".json")) continue;
    std::string base = name.substr(0, name.size() - 5);
    auto src = files.find(base + ".hip");
    if (src == files.end()) return Status::internal("embedded template " + name + " has no " + base + ".hip");
    TS_ASSIGN_OR_RETURN(KernelTemplate t, KernelTemplate::from_text(std::string(text), std::string(src->second),
                                                                   "embedded " + name, headers));
    lib.templates_.push_back(std::move(t));
  }
  return lib;
}

Result<TemplateLibrary> TemplateLibrary::from_directory(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    return Status::not_found("kernel folder " + dir.string() + " does not exist or is not a folder");
  std::vector<std::filesystem::path> jsons, header_paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".json") jsons.push_back(entry.path());
    if (entry.path().extension() == ".h") header_paths.push_back(entry.path());
  }
  std::sort(jsons.begin(), jsons.end());
  std::sort(header_paths.begin(), header_paths.end());
  auto headers = std::make_shared<KernelHeaders>();
  for (const auto& h : header_paths) {
    TS_ASSIGN_OR_RETURN(std::string text, read_file(h));
    headers->emplace_back(h.filename().string(), std::move(text));
  }
  TemplateLibrary lib;
  for (const auto& json_path : jsons) {
    auto hip_path = json_path;
    hip_path.replace_extension(".hip");
    TS_ASSIGN_OR_RETURN(std::string json_text, read_file(json_path));
    auto source = read_file(hip_path);
    if (!source.ok())
      return Status::not_found(json_path.string() + " has no kernel source beside it (" + hip_path.string() + ")");
    TS_ASSIGN_OR_RETURN(KernelTemplate t, KernelTemplate::from_text(json_text, *source, json_path.string(), headers));
    lib.templates_.push_back(std::move(t));
  }
  if (lib.templates_.empty()) return Status::not_found("no kernel templates (NAME.json + NAME.hip) in " + dir.string());
  return lib;
}

const KernelTemplate* TemplateLibrary::find(const std::string& name) const {
  for (const auto& t : templates_)
    if (t.name() == name) return &t;
  return nullptr;
}

std::vector<std::string> TemplateLibrary::names() const {
  std::vector<std::string> out;
  for (const auto& t : templates_) out.push_back(t.name());
  return out;
}

std::vector<const KernelTemplate*> TemplateLibrary::supporting(const GemmProblem& problem,
                                                               std::vector<std::string>* reasons) const {
  std::vector<const KernelTemplate*> out;
  for (const auto& t : templates_) {
    Status st = t.supports(problem);
    if (st.ok()) out.push_back(&t);
    else if (reasons) reasons->push_back(t.name() + ": " + st.message());
  }
  return out;
}

Result<TemplateLibrary> load_templates(const std::string& dir) {
  if (dir.empty()) return TemplateLibrary::embedded();
  return TemplateLibrary::from_directory(dir);
}

const KernelTemplate* embedded_template(const std::string& name) {
  // Built once for the process: the embedded files do not change while it runs.
  static const std::optional<TemplateLibrary> embedded = [] {
    auto lib = TemplateLibrary::embedded();
    return lib.ok() ? std::optional<TemplateLibrary>(std::move(lib).value()) : std::nullopt;
  }();
  return embedded ? embedded->find(name) : nullptr;
}

const KernelTemplate& launch_geometry_of(const KernelTemplate& tmpl) {
  if (!tmpl.is_recorded()) return tmpl;
  const KernelTemplate* same = embedded_template(tmpl.name());
  return same ? *same : tmpl;
}

}  // namespace tilesmith
