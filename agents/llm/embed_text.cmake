# Writes ${OUTPUT}: a C++ source defining mk::llm::${SYMBOL} as the contents of ${INPUT}.
file(READ ${INPUT} content)
file(WRITE ${OUTPUT} "namespace mk::llm {\nextern const char* const ${SYMBOL};\nconst char* const ${SYMBOL} = R\"mkembed(${content})mkembed\";\n}\n")
