// LSP positions and ranges read from a request's params (UTF-16 code units, as LSP counts).
#pragma once

#include "lsp/protocol/dispatcher.h"
#include "source/text/text_document.h"

namespace mk::server {

inline text::Utf16Position read_position(const rpc::ParamReader& p) {
  return {p.unsigned_integer("line"), p.unsigned_integer("character")};
}

inline text::Utf16Range read_range(const rpc::ParamReader& p) {
  return {read_position(p.object("start")), read_position(p.object("end"))};
}

}  // namespace mk::server
