/* A C embedder of gacc: registers MLIR's dialects and passes and gacc's
 * through the C API, parses a training step, runs gacc-pipeline once through
 * mlirParsePassPipeline and once through gaccRunPipeline, and prints both. */

#include "gacc-c/Gacc.h"
#include "mlir-c/RegisterEverything.h"

#include <stdio.h>
#include <stdlib.h>

static void printToStdout(MlirStringRef text, void *userData) {
  (void)userData;
  fwrite(text.data, 1, text.length, stdout);
}

static char *readFile(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc(size + 1);
  if (fread(text, 1, size, f) != (size_t)size) {
    fclose(f);
    free(text);
    return NULL;
  }
  text[size] = 0;
  fclose(f);
  return text;
}

static MlirModule parse(MlirContext ctx, const char *text) {
  return mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(text));
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s STEP.mlir\n", argv[0]);
    return 2;
  }
  char *text = readFile(argv[1]);
  if (!text) {
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 2;
  }

  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirRegisterAllDialects(registry);
  mlirDialectHandleInsertDialect(mlirGetDialectHandle__gacc__(), registry);
  gaccRegisterDialects(registry);
  MlirContext ctx = mlirContextCreate();
  mlirContextAppendDialectRegistry(ctx, registry);
  mlirDialectRegistryDestroy(registry);
  mlirRegisterAllPasses();
  mlirRegisterGaccPasses();
  mlirRegisterGaccConversionPasses();
  gaccRegisterAllPasses();

  /* 1. gacc-pipeline by name through MLIR's pass-pipeline parser. */
  MlirModule module = parse(ctx, text);
  if (mlirModuleIsNull(module)) {
    fprintf(stderr, "cannot parse %s\n", argv[1]);
    return 1;
  }
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  MlirOpPassManager opm = mlirPassManagerGetAsOpPassManager(pm);
  MlirLogicalResult status = mlirParsePassPipeline(
      opm,
      mlirStringRefCreateFromCString(
          "builtin.module(gacc-pipeline{micro-batch-sizes=3,1})"),
      printToStdout, NULL);
  if (mlirLogicalResultIsFailure(status)) {
    fprintf(stderr, "cannot parse the pass pipeline\n");
    return 1;
  }
  status = mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(module));
  if (mlirLogicalResultIsFailure(status)) {
    fprintf(stderr, "gacc-pipeline failed\n");
    return 1;
  }
  printf("// ---- mlirParsePassPipeline\n");
  mlirOperationPrint(mlirModuleGetOperation(module), printToStdout, NULL);
  mlirPassManagerDestroy(pm);
  mlirModuleDestroy(module);

  /* 2. gaccRunPipeline with an options string; a bad option fails. */
  module = parse(ctx, text);
  status = gaccRunPipeline(module,
                           mlirStringRefCreateFromCString("micro-batches=2"));
  if (mlirLogicalResultIsFailure(status)) {
    fprintf(stderr, "gaccRunPipeline failed\n");
    return 1;
  }
  printf("\n// ---- gaccRunPipeline\n");
  mlirOperationPrint(mlirModuleGetOperation(module), printToStdout, NULL);
  printf("\n");
  mlirModuleDestroy(module);

  module = parse(ctx, text);
  status = gaccRunPipeline(module,
                           mlirStringRefCreateFromCString("micro-batches=9"));
  printf("// ---- micro-batches=9: %s\n",
         mlirLogicalResultIsFailure(status) ? "failed" : "succeeded");
  mlirModuleDestroy(module);

  mlirContextDestroy(ctx);
  free(text);
  return 0;
}
