# embed.cmake - turns a file into a C array, so the pages' HTML, CSS and
# JavaScript live in files of their own and still ship inside memkit. With
# COMMON, the file's @MEMKIT_PAGE_COMMON@ is replaced by COMMON's text first
# (the helpers both pages share: src/analyze/page_common.js).
#   cmake -DIN=page.html -DOUT=page.c -DNAME=mk_report_page [-DCOMMON=x.js] -P embed.cmake
set(src "${IN}")
if(COMMON)
  file(READ "${IN}" text)
  file(READ "${COMMON}" common)
  string(FIND "${text}" "@MEMKIT_PAGE_COMMON@" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${IN} has no @MEMKIT_PAGE_COMMON@ for ${COMMON}")
  endif()
  string(REPLACE "@MEMKIT_PAGE_COMMON@" "${common}" text "${text}")
  set(src "${OUT}.in")
  file(WRITE "${src}" "${text}")
endif()
file(READ "${src}" hex HEX)
string(LENGTH "${hex}" len)
math(EXPR size "${len} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE "${OUT}" "/* generated from ${IN} by cmake/embed.cmake: do not edit */\n"
     "#include <stddef.h>\n"
     "const unsigned char ${NAME}[] = {\n${bytes}0x00};\n"
     "const size_t ${NAME}_len = ${size};\n")
