/* view.c - `gpuprof view`: an interactive flame graph of saved profiles in
 * a browser, offline (docs/EXPORT.md).
 *
 * The viewer is speedscope (npm package `speedscope`, MIT), whose static
 * release files scripts/deps installs under viewer/ and `make install`
 * copies to DATADIR/gpuprofd/speedscope; nothing is fetched when the user
 * runs `view`.  `view` writes ONE self-contained HTML file: speedscope's
 * script and style sheet (its font as a data: URL) and the profile as
 * speedscope JSON (export-speedscope.c, one profile per metric), so the file can be
 * copied off a cluster node and opened anywhere.  It then opens the file
 * with $BROWSER, or xdg-open when there is a display, and else prints its
 * file:// URL.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "gpuprof/error.h"
#include "gpuprof/outfile.h"
#include "gpuprof/metric.h"

#ifndef GPD_SPEEDSCOPE_BUILD_DIR
#define GPD_SPEEDSCOPE_BUILD_DIR ""
#endif
#ifndef GPD_SPEEDSCOPE_INSTALL_DIR
#define GPD_SPEEDSCOPE_INSTALL_DIR "/usr/share/gpuprofd/speedscope"
#endif

/* Whole file into a NUL-terminated buffer (*n bytes); NULL with errno. */
static char *slurp(const char *path, size_t *n) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat sb;
  char *b = NULL;
  if (fd < 0) return NULL;
  if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_size > (1 << 28)) {
    if (!errno) errno = EINVAL;
    goto done;
  }
  if (!(b = malloc((size_t)sb.st_size + 1))) goto done;
  size_t got = 0;
  while (got < (size_t)sb.st_size) {
    ssize_t r = read(fd, b + got, (size_t)sb.st_size - got);
    if (r <= 0) {
      if (r == 0) errno = EIO;
      free(b);
      b = NULL;
      goto done;
    }
    got += (size_t)r;
  }
  b[got] = 0;
  *n = got;
done:
  close(fd);
  return b;
}

/* The file of dir whose name starts with prefix and ends with suffix
 * (speedscope's release names carry a content hash). 0 or -ENOENT. */
static int find_file(const char *dir, const char *prefix, const char *suffix, char *out, size_t n) {
  DIR *d = opendir(dir);
  struct dirent *e;
  int r = -ENOENT;
  size_t lp = strlen(prefix), ls = strlen(suffix);
  if (!d) return -ENOENT;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l >= lp + ls && !strncmp(e->d_name, prefix, lp) && !strcmp(e->d_name + l - ls, suffix)) {
      snprintf(out, n, "%s/%s", dir, e->d_name);
      r = 0;
      break;
    }
  }
  closedir(d);
  return r;
}

/* speedscope's folder: $GPUPROF_SPEEDSCOPE_DIR, else the source tree's
 * viewer/ (a build run in place), else the installed copy. */
static const char *speedscope_dir(char *js, char *css, size_t n) {
  const char *env = getenv("GPUPROF_SPEEDSCOPE_DIR");
  const char *cand[] = {env && env[0] ? env : NULL, env && env[0] ? NULL : GPD_SPEEDSCOPE_BUILD_DIR,
                        env && env[0] ? NULL : GPD_SPEEDSCOPE_INSTALL_DIR};
  for (size_t i = 0; i < 3; i++)
    if (cand[i] && cand[i][0] && find_file(cand[i], "speedscope-", ".js", js, n) == 0 &&
        find_file(cand[i], "speedscope-", ".css", css, n) == 0)
      return cand[i];
  return NULL;
}

static void b64_write(FILE *f, const unsigned char *p, size_t n) {
  static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
    char q[4] = {a[v >> 18 & 63], a[v >> 12 & 63], i + 1 < n ? a[v >> 6 & 63] : '=', i + 2 < n ? a[v & 63] : '='};
    fwrite(q, 1, 4, f);
  }
}

static void html_text(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '<')
      fputs("&lt;", f);
    else if (*s == '>')
      fputs("&gt;", f);
    else if (*s == '&')
      fputs("&amp;", f);
    else
      fputc(*s, f);
  }
}

/* speedscope's style sheet with its url(...) of a font file inlined as a
 * data: URL (a missing font only falls back to the browser's monospace). */
static void css_write(FILE *f, const char *css, const char *dir) {
  const char *u;
  while ((u = strstr(css, "url("))) {
    const char *e = strchr(u, ')');
    if (!e) break;
    fwrite(css, 1, (size_t)(u - css), f);
    char name[256], path[PATH_MAX];
    const char *s = u + 4;
    if (*s == '"' || *s == '\'') s++;
    if (!strncmp(s, "./", 2)) s += 2;
    size_t l = (size_t)(e - s);
    if (l && (s[l - 1] == '"' || s[l - 1] == '\'')) l--;
    size_t fn = 0;
    unsigned char *font = NULL;
    if (l < sizeof(name) && !memchr(s, '/', l)) {
      memcpy(name, s, l);
      name[l] = 0;
      snprintf(path, sizeof(path), "%s/%s", dir, name);
      font = (unsigned char *)slurp(path, &fn);
    }
    if (font) {
      fputs("url(\"data:font/woff2;base64,", f);
      b64_write(f, font, fn);
      fputs("\")", f);
      free(font);
    } else {
      fwrite(u, 1, (size_t)(e + 1 - u), f);
    }
    css = e + 1;
  }
  fputs(css, f);
}

/* file:// URL of an absolute path, percent-encoding what a URL cannot hold. */
static void file_url(char *out, size_t n, const char *abs) {
  size_t k = (size_t)snprintf(out, n, "file://");
  for (const unsigned char *s = (const unsigned char *)abs; *s && k + 4 < n; s++) {
    if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || strchr("/-._~", *s))
      out[k++] = (char)*s;
    else
      k += (size_t)snprintf(out + k, n - k, "%%%02X", *s);
  }
  out[k] = 0;
}

/* Start a browser on url, detached: $BROWSER (a command; the URL is its
 * last argument), else xdg-open when a display is there.  1 if one was
 * started, 0 if there is none, -errno if it could not be executed. */
static int browser_open(const char *url, const char **what) {
  const char *b = getenv("BROWSER");
  int usebrowser = b && b[0];
  int fds[2], err = 0;
  if (!usebrowser) {
    const char *disp = getenv("DISPLAY"), *way = getenv("WAYLAND_DISPLAY");
    if (!(disp && disp[0]) && !(way && way[0])) return 0;
  }
  *what = usebrowser ? "$BROWSER" : "xdg-open";
  if (pipe2(fds, O_CLOEXEC) < 0) return -errno;
  pid_t pid = fork();
  if (pid < 0) {
    err = -errno;
    close(fds[0]);
    close(fds[1]);
    return err;
  }
  if (pid == 0) {
    /* a grandchild runs the browser: it outlives us and is never our zombie */
    close(fds[0]);
    if (fork() != 0) _exit(0);
    setsid();
    int nul = open("/dev/null", O_RDWR);
    if (nul >= 0) {
      dup2(nul, 0);
      dup2(nul, 1);
      dup2(nul, 2);
      if (nul > 2) close(nul);
    }
    if (usebrowser && strpbrk(b, " \t")) /* a command with arguments */
      execl("/bin/sh", "sh", "-c", "exec $BROWSER \"$1\"", "sh", url, (char *)NULL);
    else if (usebrowser)
      execlp(b, b, url, (char *)NULL);
    else
      execlp("xdg-open", "xdg-open", url, (char *)NULL);
    int e = errno;
    if (write(fds[1], &e, sizeof(e)) < 0) _exit(127);
    _exit(127);
  }
  close(fds[1]);
  int e = 0;
  ssize_t r;
  while ((r = read(fds[0], &e, sizeof(e))) < 0 && errno == EINTR) {
  }
  close(fds[0]);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
  }
  return r == (ssize_t)sizeof(e) ? -e : 1;
}

static const gpd_cli_opt_t view_opts[] = {
    {"output", required_argument, 'o', "-o OUT.html",
     "the page (default: FILE's name with .html for .gpdb, in this folder)"},
    {"metric", required_argument, 'm', "--metric NAME",
     "the metric shown first (default GPUOP; the others are a click away)"},
    {"pid", required_argument, 'p', "--pid N", "only the profiles of process N"},
    {"no-browser", no_argument, 'n', "--no-browser", "only write the page and print its URL"},
    {0}};

static gpd_cli_cmd_t view_cmd = {
    .head = "usage: gpuprof view [-o OUT.html] [--metric NAME] [--pid N] [--no-browser] FILE...\n"
            "  Interactive flame graph of saved profiles (speedscope, offline): writes one\n"
            "  self-contained HTML file and opens it with $BROWSER (or xdg-open when there is a\n"
            "  display); otherwise prints its file:// URL.\n",
    .opts = view_opts,
    .shorts = "omnp",
    .col = 17};

int gpd_cmd_view(int argc, char **argv) {
  const char *view_usage = gpd_cli_help(&view_cmd);
  int pid = 0, nobrowser = 0, c, rc = GPD_EXIT_FAIL, r;
  unsigned metric = GPD_M_GPUOP;
  const char *out = NULL;
  long v;
  optind = 1;
  while ((c = gpd_cli_opt_next(argc, argv, &view_cmd, &rc)) > 0) {
    switch (c) {
    case 'o': out = optarg; break;
    case 'm':
      if ((v = gpd_cli_metric(optarg)) < 0) return gpd_cli_usage(view_usage, "unknown metric '%s'", optarg);
      metric = (unsigned)v;
      break;
    case 'p':
      if ((v = gpd_cli_parse_uint(optarg)) <= 0) return gpd_cli_usage(view_usage, "bad --pid '%s'", optarg);
      pid = (int)v;
      break;
    case 'n': nobrowser = 1; break;
    }
  }
  if (c < 0) return rc;
  if (optind >= argc) return gpd_cli_usage(view_usage, "no profile file given");

  char jsp[PATH_MAX], cssp[PATH_MAX], outp[PATH_MAX], abs[PATH_MAX], url[3 * PATH_MAX + 16], name[256];
  char *js = NULL, *css = NULL, *json = NULL;
  size_t jsn = 0, cssn = 0, jsonn = 0;
  FILE *mem = NULL, *f = NULL;
  gpd_outfile_t of = {.fd = -1};
  char oerr[600];
  gpd_tree_t t;
  gpd_tree_init(&t);
  /* the profile first: a bad input is named whether or not the viewer is
   * installed */
  if (gpd_export_load(&t, argv + optind, argc - optind, pid, metric)) goto done;
  const char *dir = speedscope_dir(jsp, cssp, sizeof(jsp));
  if (!dir) {
    const char *env = getenv("GPUPROF_SPEEDSCOPE_DIR");
    if (env && env[0])
      fprintf(stderr, "gpuprof: no speedscope release files in %s (GPUPROF_SPEEDSCOPE_DIR)\n", env);
    else
      fprintf(stderr,
              "gpuprof: the speedscope viewer is not installed (looked in %s and %s): run scripts/deps, "
              "or set GPUPROF_SPEEDSCOPE_DIR to speedscope's dist/release folder\n",
              GPD_SPEEDSCOPE_BUILD_DIR, GPD_SPEEDSCOPE_INSTALL_DIR);
    goto done;
  }
  if (!(js = slurp(jsp, &jsn)) || !(css = slurp(cssp, &cssn))) {
    fprintf(stderr, "gpuprof: cannot read %s: %s\n", js ? cssp : jsp, strerror(errno));
    goto done;
  }
  /* an inline <script> ends at the first "</script" */
  for (const char *s = js; (s = strstr(s, "</")); s++)
    if (!strncasecmp(s, "</script", 8)) {
      fprintf(stderr, "gpuprof: %s cannot be inlined into a page (it contains \"</script\")\n", jsp);
      goto done;
    }

  /* the profile's name: the first file's base name, .gpdb dropped, kept
   * to characters that need no quoting in HTML, JS or a file name */
  const char *base = strrchr(argv[optind], '/');
  base = base ? base + 1 : argv[optind];
  size_t k = 0;
  for (const char *s = base; *s && k + 1 < sizeof(name) - 16; s++)
    name[k++] = (strchr("<>&\"'\\`", *s) || (unsigned char)*s < 0x20) ? '_' : *s;
  name[k] = 0;
  if (k > 5 && !strcmp(name + k - 5, ".gpdb")) name[k - 5] = 0;
  if (!name[0]) snprintf(name, sizeof(name), "profile");
  if (!out) {
    snprintf(outp, sizeof(outp), "%s.html", name);
    out = outp;
  }

  if (!(mem = open_memstream(&json, &jsonn))) {
    fprintf(stderr, "gpuprof: %s\n", strerror(errno));
    goto done;
  }
  r = gpd_export_speedscope(mem, &t, metric, name);
  if (fclose(mem) != 0 && r == 0) r = -ENOMEM;
  mem = NULL;
  if (r < 0) {
    fprintf(stderr, "gpuprof: cannot build the flame graph: %s\n", gpd_strerror(r));
    goto done;
  }

  if (gpd_outfile_open(&of, out, oerr, sizeof oerr) < 0) {
    fprintf(stderr, "gpuprof: %s\n", oerr);
    goto done;
  }
  f = of.f;
  fputs("<!DOCTYPE html>\n<html><head><meta charset=\"UTF-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1.0\">\n<title>",
        f);
  html_text(f, name);
  fprintf(f, " - gpuprof view</title>\n<meta name=\"generator\" content=\"gpuprof %s + speedscope\">\n<style>\n",
          GPD_VERSION);
  css_write(f, css, dir);
  /* speedscope's own command line hands a profile over through
   * window.speedscope.loadFileFromBase64(name, base64), which the app
   * defines when the page's hash names a localProfilePath (it then also
   * adds a <script> for that path, which fails harmlessly here).  Name
   * one before the app starts, open the left-heavy (aggregated) view, and
   * hand the embedded profile over once the function is there. */
  fputs("\n</style>\n<script>if (!/localProfilePath=/.test(location.hash)) "
        "history.replaceState(null, '', '#localProfilePath=gpuprof-embedded-profile&view=left-heavy');</script>\n"
        "</head>\n<body>\n<script>\n",
        f);
  fwrite(js, 1, jsn, f);
  fprintf(f, "\n</script>\n<script>(function load() {\n  var s = window.speedscope;\n"
             "  if (s && s.loadFileFromBase64) s.loadFileFromBase64(\"%s.speedscope.json\", \"",
          name);
  b64_write(f, (const unsigned char *)json, jsonn);
  fputs("\");\n  else setTimeout(load, 20);\n})();</script>\n</body></html>\n", f);
  f = NULL;
  if (gpd_outfile_commit(&of, oerr, sizeof oerr) < 0) {
    fprintf(stderr, "gpuprof: %s\n", oerr);
    goto done;
  }
  if (!realpath(out, abs)) snprintf(abs, sizeof(abs), "%s", out);
  file_url(url, sizeof(url), abs);
  printf("gpuprof: wrote %s (speedscope flame graph, %zu bytes of profile)\n", out, jsonn);
  const char *what = NULL;
  r = nobrowser ? 0 : browser_open(url, &what);
  if (r > 0)
    printf("gpuprof: opened with %s: %s\n", what, url);
  else if (r < 0)
    printf("gpuprof: could not start %s (%s); open %s in a browser\n", what, strerror(-r), url);
  else
    printf("open %s in a browser\n", url);
  rc = fflush(stdout) == 0 ? GPD_EXIT_OK : GPD_EXIT_FAIL;
done:
  if (mem) fclose(mem);
  gpd_outfile_abort(&of);
  free(json);
  free(js);
  free(css);
  gpd_tree_free(&t);
  return rc;
}
