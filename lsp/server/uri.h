// file:// URIs and the paths they name, for every part of the server that maps a document to a
// file on disk (documents, kernel runs, step-by-step sessions, search reports).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace mk::server {

// The file path of a file:// URI (percent-decoded); nullopt for other schemes.
std::optional<std::filesystem::path> path_of_uri(const std::string& uri);
// The file:// URI of an absolute path, percent-encoding what is not a plain path character.
std::string file_uri(const std::filesystem::path& path);

}  // namespace mk::server
