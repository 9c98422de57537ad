#include "source/syntax/python_tree.h"

#include <stdexcept>

namespace mk::syntax {

const TSLanguage* python_language() {
  return tree_sitter_python();
}

uint32_t python_language_abi() {
  return ts_language_version(python_language());
}

PythonTree::PythonTree() : parser_(ts_parser_new()) {
  if (!ts_parser_set_language(parser_.get(), python_language())) {
    throw std::runtime_error("tree-sitter rejected the Python grammar (ABI " +
                             std::to_string(python_language_abi()) + ")");
  }
}

void PythonTree::parse(const std::string& text) {
  tree_.reset(ts_parser_parse_string(parser_.get(), nullptr, text.data(),
                                     static_cast<uint32_t>(text.size())));
}

void PythonTree::edit_and_reparse(const text::ByteEdit& edit, const std::string& text) {
  if (!tree_) {
    parse(text);
    return;
  }
  TSInputEdit input_edit{edit.start_byte,
                         edit.old_end_byte,
                         edit.new_end_byte,
                         {edit.start_point.row, edit.start_point.column},
                         {edit.old_end_point.row, edit.old_end_point.column},
                         {edit.new_end_point.row, edit.new_end_point.column}};
  ts_tree_edit(tree_.get(), &input_edit);
  tree_.reset(ts_parser_parse_string(parser_.get(), tree_.get(), text.data(),
                                     static_cast<uint32_t>(text.size())));
}

}  // namespace mk::syntax
