// libxylem_nosymbol.so: a shared module that looks like a plugin by its name
// but exports no xylem_plugin_entry. The loader must report it unavailable.
extern "C" __attribute__((visibility("default"))) int xylem_plugin_entry_is_missing() { return 42; }
