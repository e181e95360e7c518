# embed.cmake - turns a file into a C array, so the pages' HTML, CSS and
# JavaScript live in files of their own and still ship inside memkit. With
# COMMON and STYLE, the file's @MEMKIT_PAGE_COMMON@ and @MEMKIT_PAGE_STYLE@
# are replaced by their text first (what both pages share:
# src/analyze/page_common.js and page_common.css).
#   cmake -DIN=page.html -DOUT=page.c -DNAME=mk_report_page
#         [-DCOMMON=x.js -DSTYLE=x.css] -P embed.cmake
set(src "${IN}")
if(COMMON)
  file(READ "${IN}" text)
  foreach(part COMMON STYLE)
    file(READ "${${part}}" shared)
    string(FIND "${text}" "@MEMKIT_PAGE_${part}@" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "${IN} has no @MEMKIT_PAGE_${part}@ for ${${part}}")
    endif()
    string(REPLACE "@MEMKIT_PAGE_${part}@" "${shared}" text "${text}")
  endforeach()
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
