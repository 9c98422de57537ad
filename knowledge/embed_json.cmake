# Writes ${OUTPUT}: a C++ source defining ${SYMBOL} as the contents of ${INPUT}.
file(READ ${INPUT} content)
file(WRITE ${OUTPUT} "namespace mk::knowledge {\nextern const char* const ${SYMBOL};\nconst char* const ${SYMBOL} = R\"mkjson(${content})mkjson\";\n}\n")
