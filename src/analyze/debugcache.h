/*
 * debugcache.h - separate debug files with their compressed sections
 * inflated, kept on disk by build id.
 *
 * Distributions ship separate debug files with zlib-compressed DWARF
 * (Debian's libc6-dbg: 4 MB on disk, 10 MB inflated). libdw inflates every
 * debug section of such a file when it opens it: tens of milliseconds and
 * as many megabytes of heap in each run of memkit, for the few compile
 * units a report needs. The cache keeps an inflated copy per build id, so
 * later runs map it and read only the pages they touch.
 *
 * Where: $MEMKIT_CACHE_DIR/debug, else $XDG_CACHE_HOME/memkit/debug, else
 * ~/.cache/memkit/debug. MEMKIT_CACHE_DIR set to an empty string turns the
 * cache off. A cache that cannot be written costs nothing but the saving.
 */
#ifndef MEMKIT_ANALYZE_DEBUGCACHE_H
#define MEMKIT_ANALYZE_DEBUGCACHE_H
#include <elfutils/libdwfl.h>

/* A Dwfl find_debuginfo callback. For a module with a build id, libdw's
 * default search done here (the build-id directory, then the debug link
 * beside the module, in .debug/ and under /usr/lib/debug), each file's build
 * id checked; a module found to have none is not searched again. Without a
 * build id, or with DEBUGINFOD_URLS set, dwfl_standard_find_debuginfo
 * searches (it loads libdebuginfod). A file found with compressed sections
 * is replaced by its inflated copy from the cache, made on first sight; the
 * copy's build id is checked against the module's before it is used. */
int mk_debugcache_find(Dwfl_Module *mod, void **userdata, const char *modname,
                       Dwarf_Addr base, const char *file_name, const char *debuglink_file,
                       GElf_Word debuglink_crc, char **debuginfo_file_name);

#endif /* MEMKIT_ANALYZE_DEBUGCACHE_H */
