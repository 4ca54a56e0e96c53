//===- TorchEvaluatorTest.cpp - tests of the LibTorch evaluator -----------===//
//
// Evaluates the example training steps with LibTorch: check cases from their
// headers, float32 against float64, the graphs' own gradients against LibTorch
// autograd of their loss, forward losses against independent torch
// expressions, op-by-op unit tests, and diagnostics for what the evaluator
// cannot evaluate.
//
//===----------------------------------------------------------------------===//

#include "gacc/Check/TorchEvaluator.h"

#include "gacc/Dialect/Gacc/IR/RegisterDialects.h"
#include "gacc/Dialect/Gacc/IR/StepRoles.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

using namespace mlir;
using torch::Tensor;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

std::unique_ptr<MLIRContext> makeContext() {
  DialectRegistry registry;
  gacc::registerGaccDialects(registry);
  registry.insert<ml_program::MLProgramDialect>(); // gacc-check has them all
  auto context = std::make_unique<MLIRContext>(registry);
  context->loadAllAvailableDialects();
  return context;
}

std::string examplePath(const std::string &name) {
  return std::string(GACC_EXAMPLES_DIR) + "/" + name;
}

std::vector<std::string> listFixtures() {
  std::vector<std::string> names;
  for (const auto &entry :
       std::filesystem::directory_iterator(GACC_EXAMPLES_DIR))
    if (entry.path().extension() == ".mlir")
      names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

/// The training step of a module: the function with gacc roles, else the
/// only function.
func::FuncOp getStep(ModuleOp module) {
  func::FuncOp found;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (gacc::hasGaccRoles(func))
      return func;
    found = func;
  }
  return found;
}

bool argHas(func::FuncOp f, unsigned i, gacc::Role role) {
  return gacc::getArgumentRole(f, i).role == role;
}

/// The index a result with `role` carries (a grad's parameter, ...).
std::optional<int64_t> resultIndex(func::FuncOp f, unsigned j,
                                   gacc::Role role) {
  gacc::RoleInfo info = gacc::getResultRole(f, j);
  if (info.role != role)
    return std::nullopt;
  return info.index;
}

int lossIndex(func::FuncOp f) {
  for (unsigned j = 0; j < f.getNumResults(); ++j)
    if (gacc::getResultRole(f, j).role == gacc::Role::Loss)
      return j;
  return -1;
}

/// Normwise relative error: max |a - ref| / max |ref|.
double relError(const Tensor &a, const Tensor &ref) {
  Tensor x = a.detach().to(torch::kDouble);
  Tensor r = ref.detach().to(torch::kDouble);
  double err = (x - r).abs().max().item<double>();
  double scale = r.abs().max().item<double>();
  return err / std::max(scale, 1e-300);
}

/// Evaluates and returns the results; fails the test (with the diagnostics)
/// on failure.
std::vector<Tensor> evaluate(func::FuncOp func, ArrayRef<Tensor> args,
                             torch::ScalarType computeType) {
  std::string diagnostics;
  ScopedDiagnosticHandler handler(func.getContext(), [&](Diagnostic &diag) {
    diagnostics += diag.str() + "\n";
    return success();
  });
  FailureOr<SmallVector<Tensor>> results =
      gacc::evaluateWithTorch(func, args, computeType);
  EXPECT_TRUE(succeeded(results)) << diagnostics;
  if (failed(results))
    return {};
  EXPECT_EQ(results->size(), func.getNumResults());
  for (auto [j, t] : llvm::enumerate(*results))
    EXPECT_TRUE(gacc::matchesType(t, func.getResultTypes()[j], computeType))
        << "result #" << j;
  return std::vector<Tensor>(results->begin(), results->end());
}

/// Evaluates expecting failure; returns the diagnostics.
std::string evaluateExpectingFailure(func::FuncOp func, ArrayRef<Tensor> args,
                                     torch::ScalarType computeType) {
  std::string diagnostics;
  ScopedDiagnosticHandler handler(func.getContext(), [&](Diagnostic &diag) {
    EXPECT_EQ(diag.getSeverity(), DiagnosticSeverity::Error);
    diagnostics += diag.str() + "\n";
    return success();
  });
  EXPECT_TRUE(failed(gacc::evaluateWithTorch(func, args, computeType)));
  return diagnostics;
}

/// Upper bounds (exclusive) of the integer batch inputs of the fixtures.
const std::map<std::string, int64_t> &integerBounds() {
  static const std::map<std::string, int64_t> bounds = {
      {"mlp.mlir", 3},            // class labels
      {"lm_head_masked.mlir", 5}, // target token ids
  };
  return bounds;
}

/// Random inputs for a fixture, in the dtypes of the graph: parameters and
/// batch floats normal, state uniform positive (learning rate, Adam second
/// moment), integer batch inputs in range, masks 0/1.
std::vector<Tensor> makeInputs(func::FuncOp func, const std::string &name,
                               uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<Tensor> args;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    Type type = func.getArgumentTypes()[i];
    auto dtype = gacc::getTorchElementDType(type);
    auto shape = gacc::getTorchShape(type);
    EXPECT_TRUE(dtype && shape) << name << " argument #" << i;
    if (!dtype || !shape)
      return {};
    std::vector<int64_t> sizes(shape->begin(), shape->end());
    Tensor t;
    if (!torch::isFloatingType(*dtype)) {
      auto it = integerBounds().find(name);
      EXPECT_NE(it, integerBounds().end())
          << name << ": no range known for integer argument #" << i;
      if (it == integerBounds().end())
        return {};
      t = torch::randint(0, it->second, sizes, torch::kLong).to(*dtype);
    } else if (argHas(func, i, gacc::Role::State)) {
      t = torch::rand(sizes, torch::kDouble) * 0.5 + 0.05;
    } else if (argHas(func, i, gacc::Role::Param)) {
      t = torch::randn(sizes, torch::kDouble) * 0.5;
    } else {
      t = torch::randn(sizes, torch::kDouble);
    }
    if (name == "lm_head_masked.mlir" && i == 3) { // padding mask
      t = torch::bernoulli(torch::full(sizes, 0.7, torch::kDouble));
      t.index_put_({0, 0}, 1.0);
    }
    if (name == "adamw_clip.mlir" && i == 5) // steps already taken
      t = torch::full(sizes, 3.0, torch::kDouble);
    args.push_back(t.to(*dtype));
  }
  return args;
}

/// `args` with every floating-point tensor in float64 (exact conversion).
std::vector<Tensor> toFloat64(ArrayRef<Tensor> args) {
  std::vector<Tensor> out;
  for (const Tensor &t : args)
    out.push_back(torch::isFloatingType(t.scalar_type()) ? t.to(torch::kDouble)
                                                         : t);
  return out;
}

class EvaluatorTest : public ::testing::Test {
protected:
  void SetUp() override { context = makeContext(); }

  func::FuncOp loadExample(const std::string &name) {
    module = parseSourceFile<ModuleOp>(examplePath(name), context.get());
    if (!module)
      return func::FuncOp();
    return getStep(*module);
  }

  func::FuncOp parse(StringRef source, StringRef funcName = "") {
    module = parseSourceString<ModuleOp>(source, context.get());
    if (!module)
      return func::FuncOp();
    if (funcName.empty())
      return getStep(*module);
    return module->lookupSymbol<func::FuncOp>(funcName);
  }

  std::unique_ptr<MLIRContext> context;
  OwningOpRef<ModuleOp> module;
};

//===----------------------------------------------------------------------===//
// Check cases from the fixtures' headers
//===----------------------------------------------------------------------===//

TEST_F(EvaluatorTest, LinearRegressionCheckCase) {
  func::FuncOp f = loadExample("linear_regression.mlir");
  ASSERT_TRUE(f);
  for (auto computeType : {torch::kFloat64, torch::kFloat32}) {
    auto dtype = computeType;
    Tensor w = torch::zeros({}, dtype);
    Tensor x = torch::tensor({1.0, 2.0, 3.0, 4.0}, dtype);
    Tensor y = 2 * x;
    std::vector<Tensor> r = evaluate(f, {w, x, y}, computeType);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].dim(), 0);
    EXPECT_EQ(r[0].scalar_type(), dtype);
    EXPECT_DOUBLE_EQ(r[0].item<double>(), 30.0);
    EXPECT_DOUBLE_EQ(r[1].item<double>(), -30.0);
  }
}

TEST_F(EvaluatorTest, BadBackwardCheckCase) {
  func::FuncOp f = loadExample("bad_backward.mlir");
  ASSERT_TRUE(f);
  Tensor x = torch::tensor({1.0, 2.0, 3.0, 4.0}, torch::kDouble);
  std::vector<Tensor> r = evaluate(
      f, {torch::zeros({}, torch::kDouble), x, 2 * x}, torch::kFloat64);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_DOUBLE_EQ(r[0].item<double>(), 30.0);
  EXPECT_DOUBLE_EQ(r[1].item<double>(), -15.0);
}

TEST_F(EvaluatorTest, Bf16LinearCheckCase) {
  func::FuncOp f = loadExample("bf16_linear.mlir");
  ASSERT_TRUE(f);
  Tensor x = torch::tensor(
      {{1.0, 0.0, 0.0}, {0.0, 1.0, 0.0}, {0.0, 0.0, 1.0}, {1.0, 1.0, 1.0}});
  Tensor y = torch::tensor({1.0, 2.0, 3.0, 4.0});
  for (auto computeType : {torch::kFloat32, torch::kFloat64}) {
    // In float32 mode the graph computes in bf16 (its own type).
    auto dtype =
        computeType == torch::kFloat32 ? torch::kBFloat16 : torch::kFloat64;
    std::vector<Tensor> r = evaluate(
        f, {torch::zeros({3}, dtype), x.to(dtype), y.to(dtype)}, computeType);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].scalar_type(), dtype);
    EXPECT_EQ(r[1].scalar_type(), dtype);
    EXPECT_DOUBLE_EQ(r[0].item<double>(), 7.5);
    EXPECT_TRUE(torch::equal(r[1].to(torch::kDouble),
                             torch::tensor({-2.5, -3.0, -3.5}, torch::kDouble)))
        << r[1];
  }
}

//===----------------------------------------------------------------------===//
// Every fixture: float32 vs float64, graph gradients vs autograd
//===----------------------------------------------------------------------===//

class FixtureTest : public EvaluatorTest,
                    public ::testing::WithParamInterface<std::string> {};

TEST(FixtureList, KnownFixturesArePresent) {
  std::vector<std::string> names = listFixtures();
  for (const char *name :
       {"linear_regression.mlir", "bad_backward.mlir", "mlp.mlir",
        "lm_head_masked.mlir", "batchnorm.mlir", "tied_weights.mlir",
        "adamw_clip.mlir", "bf16_linear.mlir"})
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
}

TEST_P(FixtureTest, Float32AgreesWithFloat64) {
  const std::string &name = GetParam();
  func::FuncOp f = loadExample(name);
  ASSERT_TRUE(f) << name;
  for (uint64_t seed : {1, 2, 3}) {
    std::vector<Tensor> args = makeInputs(f, name, seed);
    ASSERT_EQ(args.size(), f.getNumArguments());
    std::vector<Tensor> r32 = evaluate(f, args, torch::kFloat32);
    std::vector<Tensor> r64 = evaluate(f, toFloat64(args), torch::kFloat64);
    ASSERT_EQ(r32.size(), f.getNumResults());
    ASSERT_EQ(r64.size(), f.getNumResults());
    bool bf16 = name == "bf16_linear.mlir";
    for (unsigned j = 0; j < f.getNumResults(); ++j) {
      EXPECT_TRUE(torch::isfinite(r64[j].to(torch::kDouble)).all().item<bool>())
          << name << " result #" << j;
      EXPECT_TRUE(torch::isfinite(r32[j].to(torch::kDouble)).all().item<bool>())
          << name << " result #" << j;
      if (!torch::isFloatingType(r64[j].scalar_type())) {
        EXPECT_TRUE(torch::equal(r32[j], r64[j])) << name << " result #" << j;
        continue;
      }
      EXPECT_EQ(r64[j].scalar_type(), torch::kDouble);
      // The bf16 graph computes in bf16 in float32 mode: only its check case
      // is compared exactly (Bf16LinearCheckCase).
      if (bf16)
        continue;
      EXPECT_LE(relError(r32[j], r64[j]), 1e-4)
          << name << " result #" << j << " seed " << seed << "\nf32:\n"
          << r32[j] << "\nf64:\n"
          << r64[j];
    }
  }
}

/// Evaluates `f` in float64 with the parameters requiring grad; returns the
/// results and the autograd gradients of the loss w.r.t. each argument
/// (undefined for non-parameters).
void evaluateWithAutograd(func::FuncOp f, std::vector<Tensor> args,
                          std::vector<Tensor> &results,
                          std::vector<Tensor> &grads) {
  std::vector<Tensor> params;
  std::vector<unsigned> paramIndices;
  for (unsigned i = 0; i < f.getNumArguments(); ++i) {
    if (!argHas(f, i, gacc::Role::Param))
      continue;
    args[i] = args[i].detach().clone().requires_grad_(true);
    params.push_back(args[i]);
    paramIndices.push_back(i);
  }
  results = evaluate(f, args, torch::kFloat64);
  int loss = lossIndex(f);
  ASSERT_GE(loss, 0);
  ASSERT_FALSE(params.empty());
  ASSERT_EQ(results.size(), f.getNumResults());
  std::vector<Tensor> g = torch::autograd::grad(
      {results[loss]}, params, /*grad_outputs=*/{}, /*retain_graph=*/false,
      /*create_graph=*/false, /*allow_unused=*/true);
  grads.assign(f.getNumArguments(), Tensor());
  for (auto [k, i] : llvm::enumerate(paramIndices))
    grads[i] = g[k].defined() ? g[k] : torch::zeros_like(params[k]);
}

TEST_P(FixtureTest, GraphGradientsMatchAutograd) {
  const std::string &name = GetParam();
  func::FuncOp f = loadExample(name);
  ASSERT_TRUE(f) << name;
  for (uint64_t seed : {11, 12}) {
    std::vector<Tensor> args = toFloat64(makeInputs(f, name, seed));
    ASSERT_EQ(args.size(), f.getNumArguments());
    std::vector<Tensor> results, grads;
    evaluateWithAutograd(f, args, results, grads);
    ASSERT_FALSE(results.empty());
    unsigned numGrads = 0;
    for (unsigned j = 0; j < f.getNumResults(); ++j) {
      std::optional<int64_t> param = resultIndex(f, j, gacc::Role::Grad);
      if (!param)
        continue;
      ++numGrads;
      ASSERT_TRUE(grads[*param].defined());
      double err = relError(results[j], grads[*param]);
      if (name == "bad_backward.mlir") {
        // The deliberately wrong backward returns half the gradient.
        EXPECT_GT(err, 0.1) << "the checker must see the wrong gradient";
        EXPECT_LE(relError(2 * results[j], grads[*param]), 1e-8);
      } else {
        EXPECT_LE(err, 1e-8) << name << " result #" << j << "\ngraph:\n"
                             << results[j] << "\nautograd:\n"
                             << grads[*param];
      }
    }
    bool expectsGrads = name != "mlp.mlir" && name != "adamw_clip.mlir";
    EXPECT_EQ(numGrads > 0, expectsGrads) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, FixtureTest,
                         ::testing::ValuesIn(listFixtures()),
                         [](const ::testing::TestParamInfo<std::string> &info) {
                           std::string s =
                               info.param.substr(0, info.param.find('.'));
                           for (char &c : s)
                             if (!std::isalnum(static_cast<unsigned char>(c)))
                               c = '_';
                           return s;
                         });

//===----------------------------------------------------------------------===//
// Optimizers inside the graph: param_out from the autograd gradient
//===----------------------------------------------------------------------===//

TEST_F(EvaluatorTest, MlpSgdUpdateMatchesAutograd) {
  func::FuncOp f = loadExample("mlp.mlir");
  ASSERT_TRUE(f);
  for (uint64_t seed : {21, 22}) {
    std::vector<Tensor> args = toFloat64(makeInputs(f, "mlp.mlir", seed));
    std::vector<Tensor> results, grads;
    evaluateWithAutograd(f, args, results, grads);
    ASSERT_FALSE(results.empty());
    int lrIndex = -1;
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      if (argHas(f, i, gacc::Role::State))
        lrIndex = i;
    ASSERT_GE(lrIndex, 0);
    Tensor lr = args[lrIndex];
    unsigned numOut = 0;
    for (unsigned j = 0; j < f.getNumResults(); ++j) {
      std::optional<int64_t> p = resultIndex(f, j, gacc::Role::ParamOut);
      if (!p)
        continue;
      ++numOut;
      Tensor expected = args[*p] - lr * grads[*p];
      EXPECT_LE(relError(results[j], expected), 1e-8) << "result #" << j;
      // The update is not trivially zero.
      EXPECT_GT(relError(results[j], args[*p]), 1e-6) << "result #" << j;
    }
    EXPECT_EQ(numOut, 4u);
  }
}

TEST_F(EvaluatorTest, AdamWUpdateMatchesAutograd) {
  func::FuncOp f = loadExample("adamw_clip.mlir");
  ASSERT_TRUE(f);
  std::vector<Tensor> args = toFloat64(makeInputs(f, "adamw_clip.mlir", 31));
  // Large inputs, so that clipping is active in one of the two evaluations.
  for (double scale : {1.0, 100.0}) {
    std::vector<Tensor> scaled = args;
    scaled[1] = args[1] * scale;
    std::vector<Tensor> results, grads;
    evaluateWithAutograd(f, scaled, results, grads);
    ASSERT_EQ(results.size(), 5u);
    // The graph's constants are float32: use the same values.
    auto c = [](double v) {
      return static_cast<double>(static_cast<float>(v));
    };
    Tensor g = grads[0];
    Tensor norm = g.pow(2).sum().sqrt();
    Tensor gc =
        g * torch::minimum(c(1.0) / (norm + c(1e-6)), torch::ones_like(norm));
    Tensor t = scaled[5] + 1.0;
    Tensor m = c(0.9) * scaled[3] + c(0.1) * gc;
    Tensor v = c(0.999) * scaled[4] + c(0.001) * gc * gc;
    Tensor bc1 = 1.0 - torch::pow(c(0.9), t);
    Tensor bc2 = 1.0 - torch::pow(c(0.999), t);
    Tensor w = scaled[0] * c(0.9999) -
               (c(0.01) / bc1) * m / (v.sqrt() / bc2.sqrt() + c(1e-8));
    EXPECT_LE(relError(results[1], w), 1e-10) << results[1] << w;
    EXPECT_LE(relError(results[2], m), 1e-10);
    EXPECT_LE(relError(results[3], v), 1e-10);
    EXPECT_DOUBLE_EQ(results[4].item<double>(), 4.0);
    if (scale > 1.0) {
      EXPECT_GT(norm.item<double>(), 1.0) << "clipping should be active";
    }
  }
}

//===----------------------------------------------------------------------===//
// Forward losses against independent torch expressions
//===----------------------------------------------------------------------===//

TEST_F(EvaluatorTest, ForwardLossesMatchTorchExpressions) {
  namespace F = torch::nn::functional;
  auto lossOf = [&](const std::string &name, uint64_t seed,
                    std::vector<Tensor> &a) {
    func::FuncOp f = loadExample(name);
    EXPECT_TRUE(f) << name;
    if (!f)
      return Tensor();
    a = toFloat64(makeInputs(f, name, seed));
    std::vector<Tensor> r = evaluate(f, a, torch::kFloat64);
    int loss = lossIndex(f);
    return r.empty() || loss < 0 ? Tensor() : r[loss];
  };
  std::vector<Tensor> a;
  Tensor loss;

  for (const char *name : {"linear_regression.mlir", "bad_backward.mlir"}) {
    loss = lossOf(name, 41, a);
    ASSERT_TRUE(loss.defined());
    EXPECT_LE(relError(loss, (a[0] * a[1] - a[2]).pow(2).mean()), 1e-12);
  }

  loss = lossOf("mlp.mlir", 42, a);
  ASSERT_TRUE(loss.defined());
  {
    Tensor h = torch::relu(a[4].matmul(a[0]) + a[1]);
    Tensor logits = h.matmul(a[2]) + a[3];
    Tensor expected = F::nll_loss(F::log_softmax(logits, 1), a[5]);
    EXPECT_LE(relError(loss, expected), 1e-12);
  }

  loss = lossOf("lm_head_masked.mlir", 43, a);
  ASSERT_TRUE(loss.defined());
  {
    Tensor logp = F::log_softmax(a[1].matmul(a[0]), 2);
    Tensor nll = -logp.gather(2, a[2].unsqueeze(2)).squeeze(2);
    Tensor expected = (a[3] * nll).sum() / a[3].sum();
    EXPECT_LE(relError(loss, expected), 1e-12);
  }

  loss = lossOf("batchnorm.mlir", 44, a);
  ASSERT_TRUE(loss.defined());
  {
    Tensor z = a[1].matmul(a[0]);
    Tensor expected = (z - z.mean(0, true) - a[2]).pow(2).sum() / 4.0;
    EXPECT_LE(relError(loss, expected), 1e-12);
  }

  loss = lossOf("tied_weights.mlir", 45, a);
  ASSERT_TRUE(loss.defined());
  {
    Tensor xr = a[1].matmul(a[0]).matmul(a[0].t());
    EXPECT_LE(relError(loss, (xr - a[1]).pow(2).sum() / 4.0), 1e-12);
  }

  loss = lossOf("adamw_clip.mlir", 46, a);
  ASSERT_TRUE(loss.defined());
  EXPECT_LE(relError(loss, (a[1].matmul(a[0]) - a[2]).pow(2).mean()), 1e-12);

  loss = lossOf("bf16_linear.mlir", 47, a);
  ASSERT_TRUE(loss.defined());
  EXPECT_LE(relError(loss, (a[1].matmul(a[0]) - a[2]).pow(2).mean()), 1e-12);
}

//===----------------------------------------------------------------------===//
// Op-by-op tests
//===----------------------------------------------------------------------===//

TEST_F(EvaluatorTest, TensorOps) {
  func::FuncOp f = parse(R"mlir(
func.func @slices(%a: tensor<4x6xf32>)
    -> (tensor<6xf32>, tensor<2x3xf32>, tensor<4x6xf32>, tensor<24xf32>,
        tensor<2x2x6xf32>, tensor<?x6xf32>, index, f32, tensor<3xf32>,
        tensor<f32>, tensor<2x6xf32>, tensor<5x7xf32>, tensor<2x3xf32>) {
  %row = tensor.extract_slice %a[1, 0] [1, 6] [1, 1]
           : tensor<4x6xf32> to tensor<6xf32>
  %blk = tensor.extract_slice %a[0, 1] [2, 3] [2, 2]
           : tensor<4x6xf32> to tensor<2x3xf32>
  %z = arith.constant dense<0.0> : tensor<4x6xf32>
  %ins = tensor.insert_slice %row into %z[3, 0] [1, 6] [1, 1]
           : tensor<6xf32> into tensor<4x6xf32>
  %flat = tensor.collapse_shape %a [[0, 1]] : tensor<4x6xf32> into tensor<24xf32>
  %exp = tensor.expand_shape %a [[0, 1], [2]] output_shape [2, 2, 6]
           : tensor<4x6xf32> into tensor<2x2x6xf32>
  %cast = tensor.cast %a : tensor<4x6xf32> to tensor<?x6xf32>
  %c0 = arith.constant 0 : index
  %d = tensor.dim %cast, %c0 : tensor<?x6xf32>
  %c2 = arith.constant 2 : index
  %c5 = arith.constant 5 : index
  %e = tensor.extract %a[%c2, %c5] : tensor<4x6xf32>
  %one = arith.constant 1.0 : f32
  %fe = tensor.from_elements %e, %one, %e : tensor<3xf32>
  %fe0 = tensor.from_elements %e : tensor<f32>
  %cat = tensor.concat dim(1) %blk, %blk : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  %pad = tensor.pad %a low[1, 0] high[0, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %one : f32
  } : tensor<4x6xf32> to tensor<5x7xf32>
  %cst = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  return %row, %blk, %ins, %flat, %exp, %cast, %d, %e, %fe, %fe0, %cat, %pad, %cst
      : tensor<6xf32>, tensor<2x3xf32>, tensor<4x6xf32>, tensor<24xf32>,
        tensor<2x2x6xf32>, tensor<?x6xf32>, index, f32, tensor<3xf32>,
        tensor<f32>, tensor<2x6xf32>, tensor<5x7xf32>, tensor<2x3xf32>
}
)mlir");
  ASSERT_TRUE(f);
  Tensor a = torch::arange(24, torch::kFloat).reshape({4, 6});
  std::vector<Tensor> r = evaluate(f, {a}, torch::kFloat32);
  ASSERT_EQ(r.size(), 13u);
  EXPECT_TRUE(torch::equal(r[0], a[1]));
  EXPECT_TRUE(torch::equal(r[1], a.index({torch::indexing::Slice(0, 4, 2),
                                          torch::indexing::Slice(1, 6, 2)})));
  Tensor ins = torch::zeros({4, 6});
  ins[3] = a[1];
  EXPECT_TRUE(torch::equal(r[2], ins));
  EXPECT_TRUE(torch::equal(r[3], a.flatten()));
  EXPECT_TRUE(torch::equal(r[4], a.reshape({2, 2, 6})));
  EXPECT_TRUE(torch::equal(r[5], a));
  EXPECT_EQ(r[6].scalar_type(), torch::kLong);
  EXPECT_EQ(r[6].item<int64_t>(), 4);
  EXPECT_EQ(r[7].dim(), 0);
  EXPECT_EQ(r[7].item<float>(), 17.0f);
  EXPECT_TRUE(torch::equal(r[8], torch::tensor({17.0f, 1.0f, 17.0f})));
  EXPECT_EQ(r[9].dim(), 0);
  EXPECT_TRUE(torch::equal(r[10], torch::cat({r[1], r[1]}, 1)));
  Tensor padded = torch::ones({5, 7});
  padded.index_put_(
      {torch::indexing::Slice(1, 5), torch::indexing::Slice(0, 6)}, a);
  EXPECT_TRUE(torch::equal(r[11], padded));
  EXPECT_TRUE(torch::equal(
      r[12], torch::tensor({{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}})));

  // Gradients flow through slices and inserts.
  Tensor ag = a.to(torch::kDouble).requires_grad_(true);
  std::vector<Tensor> rg = evaluate(f, {ag}, torch::kFloat64);
  ASSERT_EQ(rg.size(), 13u);
  Tensor g = torch::autograd::grad(
      {rg[2].sum() + 2 * rg[1].sum() + rg[7] + rg[11].sum()}, {ag})[0];
  Tensor expected = torch::ones({4, 6}, torch::kDouble); // pad
  expected[1] += 1.0;                                    // inserted row
  expected.index({torch::indexing::Slice(0, 4, 2),
                  torch::indexing::Slice(1, 6, 2)}) += 2.0;
  expected[2][5] += 1.0; // extract
  EXPECT_TRUE(torch::allclose(g, expected)) << g;
}

TEST_F(EvaluatorTest, StructuredOps) {
  func::FuncOp f = parse(R"mlir(
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @structured(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>,
                      %m: tensor<3x4xf32>, %v: tensor<4xf32>)
    -> (tensor<2x3x5xf32>, tensor<4x3xf32>, tensor<3x4xf32>, tensor<3x4xf32>,
        tensor<3x4xf32>, tensor<3x4xf32>, tensor<3xf32>, tensor<3x4xf32>,
        tensor<3xf32>, tensor<4x2xf32>, tensor<3x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e235 = tensor.empty() : tensor<2x3x5xf32>
  %z235 = linalg.fill ins(%zero : f32) outs(%e235 : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %bmm = linalg.batch_matmul ins(%a, %b : tensor<2x3x4xf32>, tensor<2x4x5xf32>)
           outs(%z235 : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %e43 = tensor.empty() : tensor<4x3xf32>
  %mt = linalg.transpose ins(%m : tensor<3x4xf32>) outs(%e43 : tensor<4x3xf32>)
          permutation = [1, 0]
  %e34 = tensor.empty() : tensor<3x4xf32>
  %vb = linalg.broadcast ins(%v : tensor<4xf32>) outs(%e34 : tensor<3x4xf32>)
          dimensions = [0]
  %sum = linalg.add ins(%m, %vb : tensor<3x4xf32>, tensor<3x4xf32>)
           outs(%e34 : tensor<3x4xf32>) -> tensor<3x4xf32>
  %ex = linalg.exp ins(%m : tensor<3x4xf32>) outs(%e34 : tensor<3x4xf32>) -> tensor<3x4xf32>
  %idx = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, 0)>, #id2],
      iterator_types = ["parallel", "parallel"]}
      ins(%m : tensor<3x4xf32>) outs(%e34 : tensor<3x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %c10 = arith.constant 10 : index
    %i10 = arith.muli %i, %c10 : index
    %k = arith.addi %i10, %j : index
    %ki = arith.index_cast %k : index to i64
    %kf = arith.sitofp %ki : i64 to f32
    %r = arith.addf %x, %kf : f32
    linalg.yield %r : f32
  } -> tensor<3x4xf32>
  %e3 = tensor.empty() : tensor<3xf32>
  %z3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<3xf32>) -> tensor<3xf32>
  %mv = linalg.matvec ins(%m, %v : tensor<3x4xf32>, tensor<4xf32>)
          outs(%z3 : tensor<3xf32>) -> tensor<3xf32>
  %copy = linalg.copy ins(%m : tensor<3x4xf32>) outs(%e34 : tensor<3x4xf32>) -> tensor<3x4xf32>
  // General (non-einsum) reduction: sum_j exp(m[i,j]) * v[j] + 1.
  %one = arith.constant 1.0 : f32
  %o3 = linalg.fill ins(%one : f32) outs(%e3 : tensor<3xf32>) -> tensor<3xf32>
  %ev = linalg.generic {
      indexing_maps = [#id2, affine_map<(d0, d1) -> (d1)>, #row],
      iterator_types = ["parallel", "reduction"]}
      ins(%m, %v : tensor<3x4xf32>, tensor<4xf32>) outs(%o3 : tensor<3xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %e = math.exp %x : f32
    %p = arith.mulf %e, %y : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  // Reduction with a permuted output map: out[k, b] = sum_i a[b, i, k].
  %e42 = tensor.empty() : tensor<4x2xf32>
  %z42 = linalg.fill ins(%zero : f32) outs(%e42 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %tr = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>,
                       affine_map<(d0, d1, d2) -> (d2, d0)>],
      iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a : tensor<2x3x4xf32>) outs(%z42 : tensor<4x2xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<4x2xf32>
  // Elementwise use of the output value: out = m + init (init = m).
  %acc = linalg.generic {
      indexing_maps = [#id2, #id2],
      iterator_types = ["parallel", "parallel"]}
      ins(%m : tensor<3x4xf32>) outs(%m : tensor<3x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %o : f32
    linalg.yield %s : f32
  } -> tensor<3x4xf32>
  return %bmm, %mt, %vb, %sum, %ex, %idx, %mv, %copy, %ev, %tr, %acc
      : tensor<2x3x5xf32>, tensor<4x3xf32>, tensor<3x4xf32>, tensor<3x4xf32>,
        tensor<3x4xf32>, tensor<3x4xf32>, tensor<3xf32>, tensor<3x4xf32>,
        tensor<3xf32>, tensor<4x2xf32>, tensor<3x4xf32>
}
)mlir");
  ASSERT_TRUE(f);
  torch::manual_seed(5);
  Tensor a = torch::randn({2, 3, 4}, torch::kDouble);
  Tensor b = torch::randn({2, 4, 5}, torch::kDouble);
  Tensor m = torch::randn({3, 4}, torch::kDouble);
  Tensor v = torch::randn({4}, torch::kDouble);
  std::vector<Tensor> r = evaluate(f, {a, b, m, v}, torch::kFloat64);
  ASSERT_EQ(r.size(), 11u);
  EXPECT_LE(relError(r[0], torch::bmm(a, b)), 1e-14);
  EXPECT_TRUE(torch::equal(r[1], m.t()));
  EXPECT_TRUE(torch::equal(r[2], v.expand({3, 4})));
  EXPECT_TRUE(torch::equal(r[3], m + v));
  EXPECT_LE(relError(r[4], m.exp()), 1e-15);
  Tensor ij = torch::arange(3, torch::kDouble).unsqueeze(1) * 10 +
              torch::arange(4, torch::kDouble);
  EXPECT_TRUE(torch::equal(
      r[5], m.index({torch::indexing::Slice(), 0}).unsqueeze(1) + ij));
  EXPECT_LE(relError(r[6], m.matmul(v)), 1e-14);
  EXPECT_TRUE(torch::equal(r[7], m));
  EXPECT_LE(relError(r[8], m.exp().matmul(v) + 1), 1e-14);
  EXPECT_LE(relError(r[9], a.sum(1).t()), 1e-14);
  EXPECT_TRUE(torch::equal(r[10], 2 * m));

  // The same in float32 agrees.
  std::vector<Tensor> r32 = evaluate(f,
                                     {a.to(torch::kFloat), b.to(torch::kFloat),
                                      m.to(torch::kFloat), v.to(torch::kFloat)},
                                     torch::kFloat32);
  ASSERT_EQ(r32.size(), 11u);
  for (unsigned j = 0; j < 11; ++j) {
    EXPECT_EQ(r32[j].scalar_type(), torch::kFloat);
    EXPECT_LE(relError(r32[j], r[j]), 1e-5) << "result #" << j;
  }
}

TEST_F(EvaluatorTest, NamedElementwiseAndContractionOps) {
  func::FuncOp f = parse(R"mlir(
func.func @named(%a: tensor<3x4xf32>, %b: tensor<3x4xf32>, %bt: tensor<5x4xf32>)
    -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>,
        tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>,
        tensor<3x5xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>,
        tensor<3x5xf32>) {
  %e = tensor.empty() : tensor<3x4xf32>
  %sub = linalg.sub ins(%a, %b : tensor<3x4xf32>, tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %mul = linalg.mul ins(%a, %b : tensor<3x4xf32>, tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %div = linalg.div ins(%a, %b : tensor<3x4xf32>, tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %max = linalg.max ins(%a, %b : tensor<3x4xf32>, tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %min = linalg.min ins(%a, %b : tensor<3x4xf32>, tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %neg = linalg.negf ins(%a : tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %abs = linalg.abs ins(%a : tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %log = linalg.log ins(%abs : tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %zero = arith.constant 0.0 : f32
  %e35 = tensor.empty() : tensor<3x5xf32>
  %z35 = linalg.fill ins(%zero : f32) outs(%e35 : tensor<3x5xf32>) -> tensor<3x5xf32>
  %mm = linalg.matmul
      indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                       affine_map<(d0, d1, d2) -> (d1, d2)>,
                       affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%a, %bt : tensor<3x4xf32>, tensor<5x4xf32>)
      outs(%z35 : tensor<3x5xf32>) -> tensor<3x5xf32>
  %sm = linalg.softmax dimension(1) ins(%a : tensor<3x4xf32>)
          outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %ew = linalg.elementwise kind=#linalg.elementwise_kind<exp>
          ins(%a : tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %map = linalg.map { arith.addf } ins(%a, %b : tensor<3x4xf32>, tensor<3x4xf32>)
           outs(%e : tensor<3x4xf32>)
  %ct = linalg.contract
      indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                       affine_map<(d0, d1, d2) -> (d1, d2)>,
                       affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%a, %bt : tensor<3x4xf32>, tensor<5x4xf32>)
      outs(%z35 : tensor<3x5xf32>) -> tensor<3x5xf32>
  return %sub, %mul, %div, %max, %min, %neg, %abs, %log, %mm, %sm, %ew, %map,
         %ct
      : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>,
        tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>,
        tensor<3x5xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>,
        tensor<3x5xf32>
}
)mlir");
  ASSERT_TRUE(f);
  torch::manual_seed(7);
  Tensor a = torch::randn({3, 4}, torch::kDouble);
  Tensor b = torch::randn({3, 4}, torch::kDouble);
  Tensor bt = torch::randn({5, 4}, torch::kDouble);
  std::vector<Tensor> r = evaluate(f, {a, b, bt}, torch::kFloat64);
  ASSERT_EQ(r.size(), 13u);
  EXPECT_TRUE(torch::equal(r[0], a - b));
  EXPECT_TRUE(torch::equal(r[1], a * b));
  EXPECT_TRUE(torch::equal(r[2], a / b));
  EXPECT_TRUE(torch::equal(r[3], torch::maximum(a, b)));
  EXPECT_TRUE(torch::equal(r[4], torch::minimum(a, b)));
  EXPECT_TRUE(torch::equal(r[5], -a));
  EXPECT_TRUE(torch::equal(r[6], a.abs()));
  EXPECT_TRUE(torch::equal(r[7], a.abs().log()));
  EXPECT_LE(relError(r[8], a.matmul(bt.t())), 1e-14);
  EXPECT_LE(relError(r[9], torch::softmax(a, 1)), 1e-14);
  EXPECT_LE(relError(r[10], a.exp()), 1e-15);
  EXPECT_TRUE(torch::equal(r[11], a + b));
  EXPECT_LE(relError(r[12], a.matmul(bt.t())), 1e-14);
}

TEST_F(EvaluatorTest, MoreTensorOps) {
  func::FuncOp f = parse(R"mlir(
func.func @more(%s: f32, %a: tensor<2x3xi64>, %n: index)
    -> (tensor<2x?xf32>, tensor<2x3xi64>, tensor<3x2xi64>, index) {
  %sp = tensor.splat %s[%n] : tensor<2x?xf32>
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %v = arith.constant 42 : i64
  %ins = tensor.insert %v into %a[%c1, %c2] : tensor<2x3xi64>
  %shape = arith.constant dense<[3, 2]> : tensor<2xi64>
  %rs = tensor.reshape %a(%shape) : (tensor<2x3xi64>, tensor<2xi64>) -> tensor<3x2xi64>
  %rk = tensor.rank %a : tensor<2x3xi64>
  return %sp, %ins, %rs, %rk : tensor<2x?xf32>, tensor<2x3xi64>, tensor<3x2xi64>, index
}
)mlir");
  ASSERT_TRUE(f);
  Tensor a = torch::arange(6, torch::kLong).reshape({2, 3});
  std::vector<Tensor> r = evaluate(
      f, {torch::tensor(2.5f), a, torch::tensor(int64_t(4))}, torch::kFloat32);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_TRUE(torch::equal(r[0], torch::full({2, 4}, 2.5f)));
  Tensor ins = a.clone();
  ins[1][2] = 42;
  EXPECT_TRUE(torch::equal(r[1], ins));
  EXPECT_TRUE(torch::equal(a, torch::arange(6, torch::kLong).reshape({2, 3})))
      << "inputs are not modified";
  EXPECT_TRUE(torch::equal(r[2], a.reshape({3, 2})));
  EXPECT_EQ(r[3].item<int64_t>(), 2);
}

TEST_F(EvaluatorTest, ReductionCombiners) {
  func::FuncOp f = parse(R"mlir(
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @reductions(%a: tensor<3x4xf32>, %n: tensor<3x4xi32>)
    -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>,
        tensor<4xf32>, tensor<3xi32>, tensor<3xi32>, tensor<f32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %pinf = arith.constant 0x7F800000 : f32
  %e = tensor.empty() : tensor<3xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %n0 = linalg.fill ins(%pinf : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %p0 = linalg.fill ins(%one : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %r:4 = linalg.generic {
      indexing_maps = [#id2, #row, #row, #row, #row],
      iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<3x4xf32>) outs(%s0, %m0, %n0, %p0
        : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  ^bb0(%x: f32, %s: f32, %m: f32, %mn: f32, %p: f32):
    %sq = arith.mulf %x, %x : f32
    %s1 = arith.addf %s, %sq : f32
    %m1 = arith.maximumf %m, %x : f32
    %n1 = arith.minnumf %x, %mn : f32
    %p1 = arith.mulf %p, %x : f32
    linalg.yield %s1, %m1, %n1, %p1 : f32, f32, f32, f32
  } -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
  %e4 = tensor.empty() : tensor<4xf32>
  %c0 = linalg.fill ins(%one : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %cs = linalg.reduce ins(%a : tensor<3x4xf32>) outs(%c0 : tensor<4xf32>) dimensions = [0]
    (%in: f32, %init: f32) {
      %t = arith.addf %in, %init : f32
      linalg.yield %t : f32
    }
  %ei = tensor.empty() : tensor<3xi32>
  %izero = arith.constant 0 : i32
  %imin = arith.constant -2147483648 : i32
  %zi = linalg.fill ins(%izero : i32) outs(%ei : tensor<3xi32>) -> tensor<3xi32>
  %mi = linalg.fill ins(%imin : i32) outs(%ei : tensor<3xi32>) -> tensor<3xi32>
  %isum = linalg.reduce ins(%n : tensor<3x4xi32>) outs(%zi : tensor<3xi32>) dimensions = [1]
    (%in: i32, %init: i32) {
      %t = arith.addi %init, %in : i32
      linalg.yield %t : i32
    }
  %imax = linalg.reduce ins(%n : tensor<3x4xi32>) outs(%mi : tensor<3xi32>) dimensions = [1]
    (%in: i32, %init: i32) {
      %t = arith.maxsi %init, %in : i32
      linalg.yield %t : i32
    }
  // A reduction of a value that does not depend on the loops: 12 * 2.
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %two = arith.constant 2.0 : f32
  %cnt = linalg.generic {
      indexing_maps = [#id2, affine_map<(d0, d1) -> ()>],
      iterator_types = ["reduction", "reduction"]}
      ins(%a : tensor<3x4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%unused: f32, %acc: f32):
    %s = arith.addf %acc, %two : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r#0, %r#1, %r#2, %r#3, %cs, %isum, %imax, %cnt
      : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>,
        tensor<4xf32>, tensor<3xi32>, tensor<3xi32>, tensor<f32>
}
)mlir");
  ASSERT_TRUE(f);
  torch::manual_seed(6);
  Tensor a = torch::randn({3, 4});
  Tensor n = torch::randint(-100, 100, {3, 4}, torch::kInt);
  for (auto computeType : {torch::kFloat32, torch::kFloat64}) {
    Tensor ac = computeType == torch::kFloat64 ? a.to(torch::kDouble) : a;
    std::vector<Tensor> r = evaluate(f, {ac, n}, computeType);
    ASSERT_EQ(r.size(), 8u);
    EXPECT_LE(relError(r[0], ac.pow(2).sum(1)), 1e-6);
    EXPECT_TRUE(torch::equal(r[1], std::get<0>(ac.max(1))));
    EXPECT_TRUE(torch::equal(r[2], std::get<0>(ac.min(1))));
    EXPECT_LE(relError(r[3], ac.prod(1)), 1e-6);
    EXPECT_LE(relError(r[4], ac.sum(0) + 1), 1e-6);
    EXPECT_EQ(r[5].scalar_type(), torch::kInt);
    EXPECT_TRUE(torch::equal(r[5], n.sum(1).to(torch::kInt)));
    EXPECT_TRUE(torch::equal(r[6], std::get<0>(n.max(1))));
    EXPECT_EQ(r[7].item<double>(), 24.0);
  }
}

TEST_F(EvaluatorTest, ArithAndMathOps) {
  func::FuncOp f = parse(R"mlir(
func.func @elementwise(%x: tensor<6xf32>, %y: tensor<6xf32>,
                       %i: tensor<6xi32>, %j: tensor<6xi32>)
    -> (tensor<6xi1>, tensor<6xi1>, tensor<6xi1>, tensor<6xi1>, tensor<6xi1>,
        tensor<6xi1>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>,
        tensor<6xf32>, tensor<6xf32>, tensor<6xi32>, tensor<6xi32>,
        tensor<6xi32>, tensor<6xi32>, tensor<6xi1>, tensor<6xi1>,
        tensor<6xf32>, tensor<6xf32>, tensor<6xi32>, tensor<6xf32>,
        tensor<6xi64>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) {
  %oeq = arith.cmpf oeq, %x, %y : tensor<6xf32>
  %une = arith.cmpf une, %x, %y : tensor<6xf32>
  %ult = arith.cmpf ult, %x, %y : tensor<6xf32>
  %ord = arith.cmpf ord, %x, %y : tensor<6xf32>
  %uno = arith.cmpf uno, %x, %y : tensor<6xf32>
  %ogt = arith.cmpf ogt, %x, %y : tensor<6xf32>
  %maxf = arith.maximumf %x, %y : tensor<6xf32>
  %maxn = arith.maxnumf %x, %y : tensor<6xf32>
  %minf = arith.minimumf %x, %y : tensor<6xf32>
  %minn = arith.minnumf %x, %y : tensor<6xf32>
  %sel = arith.select %ogt, %x, %y : tensor<6xi1>, tensor<6xf32>
  %div = arith.divsi %i, %j : tensor<6xi32>
  %rem = arith.remsi %i, %j : tensor<6xi32>
  %fdiv = arith.floordivsi %i, %j : tensor<6xi32>
  %cdiv = arith.ceildivsi %i, %j : tensor<6xi32>
  %cult = arith.cmpi ult, %i, %j : tensor<6xi32>
  %cslt = arith.cmpi slt, %i, %j : tensor<6xi32>
  %sf = arith.sitofp %i : tensor<6xi32> to tensor<6xf32>
  %uf = arith.uitofp %i : tensor<6xi32> to tensor<6xf32>
  %fi = arith.fptosi %y : tensor<6xf32> to tensor<6xi32>
  %bf = arith.truncf %x : tensor<6xf32> to tensor<6xbf16>
  %bx = arith.extf %bf : tensor<6xbf16> to tensor<6xf32>
  %ext = arith.extui %i : tensor<6xi32> to tensor<6xi64>
  %ax = math.absf %x : tensor<6xf32>
  %t = math.tanh %ax : tensor<6xf32>
  %s = math.sqrt %ax : tensor<6xf32>
  %rs = math.rsqrt %ax : tensor<6xf32>
  %l = math.log1p %ax : tensor<6xf32>
  %e2 = math.exp2 %t : tensor<6xf32>
  %er = math.erf %e2 : tensor<6xf32>
  %pw = math.powf %ax, %er : tensor<6xf32>
  %lg = math.log %pw : tensor<6xf32>
  %ex = math.exp %lg : tensor<6xf32>
  %sum = arith.addf %s, %rs : tensor<6xf32>
  %sum2 = arith.addf %sum, %l : tensor<6xf32>
  %neg = arith.negf %ex : tensor<6xf32>
  return %oeq, %une, %ult, %ord, %uno, %ogt, %maxf, %maxn, %minf, %minn, %sel,
         %div, %rem, %fdiv, %cdiv, %cult, %cslt, %sf, %uf, %fi, %bx, %ext,
         %sum2, %neg, %er
      : tensor<6xi1>, tensor<6xi1>, tensor<6xi1>, tensor<6xi1>, tensor<6xi1>,
        tensor<6xi1>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>,
        tensor<6xf32>, tensor<6xf32>, tensor<6xi32>, tensor<6xi32>,
        tensor<6xi32>, tensor<6xi32>, tensor<6xi1>, tensor<6xi1>,
        tensor<6xf32>, tensor<6xf32>, tensor<6xi32>, tensor<6xf32>,
        tensor<6xi64>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>
}
)mlir");
  ASSERT_TRUE(f);
  float nan = std::nanf("");
  Tensor x = torch::tensor({1.5f, -2.0f, nan, 0.25f, 3.0f, 1.2345678f});
  Tensor y = torch::tensor({1.5f, 2.0f, 1.0f, nan, -1.7f, -0.5f});
  Tensor i = torch::tensor({7, -7, 7, -7, 0, -3}, torch::kInt);
  Tensor j = torch::tensor({2, 2, -2, -2, 5, 4}, torch::kInt);
  std::vector<Tensor> r = evaluate(f, {x, y, i, j}, torch::kFloat32);
  ASSERT_EQ(r.size(), 25u);
  auto bools = [](std::initializer_list<int> v) {
    return torch::tensor(std::vector<int>(v), torch::kInt).to(torch::kBool);
  };
  EXPECT_TRUE(torch::equal(r[0], bools({1, 0, 0, 0, 0, 0}))); // oeq
  EXPECT_TRUE(torch::equal(r[1], bools({0, 1, 1, 1, 1, 1}))); // une
  EXPECT_TRUE(torch::equal(r[2], bools({0, 1, 1, 1, 0, 0}))); // ult
  EXPECT_TRUE(torch::equal(r[3], bools({1, 1, 0, 0, 1, 1}))); // ord
  EXPECT_TRUE(torch::equal(r[4], bools({0, 0, 1, 1, 0, 0}))); // uno
  EXPECT_TRUE(torch::equal(r[5], bools({0, 0, 0, 0, 1, 1}))); // ogt
  auto same = [](const Tensor &a, const Tensor &b) {
    return torch::allclose(a, b, 1e-6, 1e-6, /*equal_nan=*/true);
  };
  EXPECT_TRUE(
      same(r[6], torch::tensor({1.5f, 2.0f, nan, nan, 3.0f, 1.2345678f})));
  EXPECT_TRUE(
      same(r[7], torch::tensor({1.5f, 2.0f, 1.0f, 0.25f, 3.0f, 1.2345678f})));
  EXPECT_TRUE(same(r[8], torch::tensor({1.5f, -2.0f, nan, nan, -1.7f, -0.5f})));
  EXPECT_TRUE(
      same(r[9], torch::tensor({1.5f, -2.0f, 1.0f, 0.25f, -1.7f, -0.5f})));
  EXPECT_TRUE(
      same(r[10], torch::tensor({1.5f, 2.0f, 1.0f, nan, 3.0f, 1.2345678f})));
  EXPECT_TRUE(
      torch::equal(r[11], torch::tensor({3, -3, -3, 3, 0, 0}, torch::kInt)));
  EXPECT_TRUE(
      torch::equal(r[12], torch::tensor({1, -1, 1, -1, 0, -3}, torch::kInt)));
  EXPECT_TRUE(
      torch::equal(r[13], torch::tensor({3, -4, -4, 3, 0, -1}, torch::kInt)));
  EXPECT_TRUE(
      torch::equal(r[14], torch::tensor({4, -3, -3, 4, 0, 0}, torch::kInt)));
  // Unsigned: -7 and -3 are huge.
  EXPECT_TRUE(torch::equal(r[15], bools({0, 0, 1, 1, 1, 0})));
  EXPECT_TRUE(torch::equal(r[16], bools({0, 1, 0, 1, 1, 1})));
  EXPECT_TRUE(torch::equal(r[17], i.to(torch::kFloat)));
  Tensor uf =
      torch::tensor({7.0, 4294967289.0, 7.0, 4294967289.0, 0.0, 4294967293.0},
                    torch::kDouble)
          .to(torch::kFloat);
  EXPECT_TRUE(torch::equal(r[18], uf));
  // fptosi of NaN is poison: compare the defined lanes only.
  EXPECT_TRUE(torch::equal(r[19].index({torch::indexing::Slice(0, 3)}),
                           torch::tensor({1, 2, 1}, torch::kInt)));
  EXPECT_TRUE(torch::equal(r[19].index({torch::indexing::Slice(4, 6)}),
                           torch::tensor({-1, 0}, torch::kInt)));
  EXPECT_TRUE(same(r[20], x.to(torch::kBFloat16).to(torch::kFloat)));
  EXPECT_FALSE(torch::equal(r[20].index({5}), x.index({5})));
  EXPECT_TRUE(
      torch::equal(r[21], torch::tensor(std::vector<int64_t>{
                              7, 4294967289, 7, 4294967289, 0, 4294967293})));
  Tensor ax = x.abs();
  Tensor er = torch::erf(torch::exp2(torch::tanh(ax)));
  EXPECT_TRUE(same(r[22], ax.sqrt() + ax.rsqrt() + ax.log1p()));
  EXPECT_TRUE(same(r[23], -torch::exp(torch::log(torch::pow(ax, er)))));
  EXPECT_TRUE(same(r[24], er));
}

TEST_F(EvaluatorTest, CallsAndScalars) {
  func::FuncOp f = parse(R"mlir(
func.func private @square(%x: tensor<3xf32>) -> tensor<3xf32> {
  %r = arith.mulf %x, %x : tensor<3xf32>
  return %r : tensor<3xf32>
}
func.func @main(%x: tensor<3xf32>, %s: f32) -> (tensor<3xf32>, f32) {
  %sq = func.call @square(%x) : (tensor<3xf32>) -> tensor<3xf32>
  %two = arith.constant 2.0 : f32
  %t = arith.mulf %s, %two : f32
  return %sq, %t : tensor<3xf32>, f32
}
)mlir",
                         "main");
  ASSERT_TRUE(f);
  std::vector<Tensor> r =
      evaluate(f, {torch::tensor({1.0f, 2.0f, 3.0f}), torch::tensor(1.5f)},
               torch::kFloat32);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(torch::equal(r[0], torch::tensor({1.0f, 4.0f, 9.0f})));
  EXPECT_EQ(r[1].item<float>(), 3.0f);
}

TEST_F(EvaluatorTest, TypeHelpers) {
  Builder b(context.get());
  EXPECT_EQ(gacc::getTorchDType(b.getF32Type()), torch::kFloat);
  EXPECT_EQ(gacc::getTorchDType(b.getBF16Type()), torch::kBFloat16);
  EXPECT_EQ(gacc::getTorchDType(b.getBF16Type(), torch::kFloat64),
            torch::kDouble);
  EXPECT_EQ(gacc::getTorchDType(b.getIndexType()), torch::kLong);
  EXPECT_EQ(gacc::getTorchDType(b.getI1Type()), torch::kBool);
  EXPECT_EQ(gacc::getTorchDType(b.getIntegerType(3)), std::nullopt);
  auto type = RankedTensorType::get({4, 3}, b.getBF16Type());
  EXPECT_EQ(gacc::getTorchElementDType(type), torch::kBFloat16);
  EXPECT_EQ(*gacc::getTorchShape(type), SmallVector<int64_t>({4, 3}));
  EXPECT_TRUE(gacc::getTorchShape(b.getF32Type())->empty());
  EXPECT_EQ(gacc::getMlirElementType(torch::kBFloat16, context.get()),
            b.getBF16Type());
  Tensor t = torch::zeros({4, 3}, torch::kBFloat16);
  EXPECT_EQ(gacc::getMlirTensorType(t, context.get()), type);
  EXPECT_TRUE(gacc::matchesType(t, type));
  EXPECT_FALSE(gacc::matchesType(t, type, torch::kFloat64));
  EXPECT_TRUE(gacc::matchesType(
      torch::zeros({7, 3}, torch::kBFloat16),
      RankedTensorType::get({ShapedType::kDynamic, 3}, b.getBF16Type())));
}

//===----------------------------------------------------------------------===//
// Forms torch-mlir's TorchToLinalg emits
//===----------------------------------------------------------------------===//

/// d(sum(out * seed))/d(inputs) by LibTorch autograd.
std::vector<Tensor> gradients(const Tensor &out, const Tensor &seed,
                              const std::vector<Tensor> &inputs) {
  return torch::autograd::grad({(out * seed).sum()}, inputs,
                               /*grad_outputs=*/{}, /*retain_graph=*/true,
                               /*create_graph=*/false, /*allow_unused=*/true);
}

// log_softmax and softmax as torch-mlir lowers them after decomposition:
// aten.max.dim (values and an unused index result in one generic, then
// expand_shape to keepdim), keepdim sums with `(d0, 0)` output maps, and
// `(d0, 0)` broadcasts of the [N, 1] statistics.
TEST_F(EvaluatorTest, KeepdimReductionsLikeTorchMlirSoftmax) {
  func::FuncOp f = parse(R"mlir(
#map = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0)>
#keep = affine_map<(d0, d1) -> (d0, 0)>
func.func @log_softmax(%x: tensor<4x5xf32>)
    -> (tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x1xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %c0i = arith.constant 0 : i64
  %ev = tensor.empty() : tensor<4xf32>
  %fv = linalg.fill ins(%ninf : f32) outs(%ev : tensor<4xf32>) -> tensor<4xf32>
  %ei = tensor.empty() : tensor<4xi64>
  %fi = linalg.fill ins(%c0i : i64) outs(%ei : tensor<4xi64>) -> tensor<4xi64>
  %max:2 = linalg.generic {indexing_maps = [#map, #red, #red],
                           iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x5xf32>) outs(%fv, %fi : tensor<4xf32>, tensor<4xi64>) {
  ^bb0(%in: f32, %old: f32, %oldi: i64):
    %i = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i64
    %m = arith.maximumf %in, %old : f32
    %gt = arith.cmpf ogt, %in, %old : f32
    %sel = arith.select %gt, %ii, %oldi : i64
    linalg.yield %m, %sel : f32, i64
  } -> (tensor<4xf32>, tensor<4xi64>)
  %maxk = tensor.expand_shape %max#0 [[0, 1]] output_shape [4, 1]
      : tensor<4xf32> into tensor<4x1xf32>
  %e = tensor.empty() : tensor<4x5xf32>
  %sub = linalg.generic {indexing_maps = [#map, #keep, #map],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x, %maxk : tensor<4x5xf32>, tensor<4x1xf32>)
      outs(%e : tensor<4x5xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.subf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x5xf32>
  %exp = linalg.generic {indexing_maps = [#map, #map],
                         iterator_types = ["parallel", "parallel"]}
      ins(%sub : tensor<4x5xf32>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = math.exp %a : f32
    linalg.yield %s : f32
  } -> tensor<4x5xf32>
  %e41 = tensor.empty() : tensor<4x1xf32>
  %z41 = linalg.fill ins(%zero : f32) outs(%e41 : tensor<4x1xf32>) -> tensor<4x1xf32>
  %sum = linalg.generic {indexing_maps = [#map, #keep],
                         iterator_types = ["parallel", "reduction"]}
      ins(%exp : tensor<4x5xf32>) outs(%z41 : tensor<4x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x1xf32>
  %log = linalg.generic {indexing_maps = [#map, #map],
                         iterator_types = ["parallel", "parallel"]}
      ins(%sum : tensor<4x1xf32>) outs(%e41 : tensor<4x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = math.log %a : f32
    linalg.yield %s : f32
  } -> tensor<4x1xf32>
  %ls = linalg.generic {indexing_maps = [#map, #keep, #map],
                        iterator_types = ["parallel", "parallel"]}
      ins(%sub, %log : tensor<4x5xf32>, tensor<4x1xf32>)
      outs(%e : tensor<4x5xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.subf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x5xf32>
  %sm = linalg.generic {indexing_maps = [#map, #keep, #map],
                        iterator_types = ["parallel", "parallel"]}
      ins(%exp, %sum : tensor<4x5xf32>, tensor<4x1xf32>)
      outs(%e : tensor<4x5xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.divf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x5xf32>
  return %ls, %sm, %sum : tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x1xf32>
}
)mlir");
  ASSERT_TRUE(f);
  torch::manual_seed(11);
  Tensor x = (torch::randn({4, 5}, torch::kDouble) * 3).requires_grad_(true);
  std::vector<Tensor> r = evaluate(f, {x}, torch::kFloat64);
  ASSERT_EQ(r.size(), 3u);
  Tensor ls = torch::log_softmax(x, 1), sm = torch::softmax(x, 1);
  EXPECT_LE(relError(r[0], ls), 1e-14);
  EXPECT_LE(relError(r[1], sm), 1e-14);
  Tensor shifted = x - std::get<0>(x.max(1, /*keepdim=*/true));
  EXPECT_LE(relError(r[2], shifted.exp().sum(1, /*keepdim=*/true)), 1e-14);
  // Autograd flows through the max, the keepdim sums and the broadcasts.
  Tensor seed = torch::randn({4, 5}, torch::kDouble);
  EXPECT_LE(
      relError(gradients(r[0], seed, {x})[0], gradients(ls, seed, {x})[0]),
      1e-13);
  EXPECT_LE(
      relError(gradients(r[1], seed, {x})[0], gradients(sm, seed, {x})[0]),
      1e-13);
  // Float32 agrees.
  std::vector<Tensor> r32 =
      evaluate(f, {x.detach().to(torch::kFloat)}, torch::kFloat32);
  ASSERT_EQ(r32.size(), 3u);
  EXPECT_LE(relError(r32[0], ls), 1e-6);
}

// aten.max.dim / argmax as TorchToLinalg lowers them: one generic yields the
// running maximum and `select(cmpf ogt, index_cast(linalg.index 1), idx)`;
// ties keep the first index, an initial value that is not beaten keeps the
// initial index.
TEST_F(EvaluatorTest, ArgMaxAndArgMinLikeTorchMlir) {
  func::FuncOp f = parse(R"mlir(
#map = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0)>
func.func @argmax(%x: tensor<3x4xf32>)
    -> (tensor<3xf32>, tensor<3xi64>, tensor<3xf32>, tensor<3xi64>) {
  %ninf = arith.constant 0xFF800000 : f32
  %m2 = arith.constant -2.0 : f32
  %c0i = arith.constant 0 : i64
  %c7i = arith.constant 7 : i64
  %ev = tensor.empty() : tensor<3xf32>
  %fv = linalg.fill ins(%ninf : f32) outs(%ev : tensor<3xf32>) -> tensor<3xf32>
  %gv = linalg.fill ins(%m2 : f32) outs(%ev : tensor<3xf32>) -> tensor<3xf32>
  %ei = tensor.empty() : tensor<3xi64>
  %fi = linalg.fill ins(%c0i : i64) outs(%ei : tensor<3xi64>) -> tensor<3xi64>
  %gi = linalg.fill ins(%c7i : i64) outs(%ei : tensor<3xi64>) -> tensor<3xi64>
  %max:2 = linalg.generic {indexing_maps = [#map, #red, #red],
                           iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<3x4xf32>) outs(%fv, %fi : tensor<3xf32>, tensor<3xi64>) {
  ^bb0(%in: f32, %old: f32, %oldi: i64):
    %i = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i64
    %m = arith.maximumf %in, %old : f32
    %gt = arith.cmpf ogt, %in, %old : f32
    %sel = arith.select %gt, %ii, %oldi : i64
    linalg.yield %m, %sel : f32, i64
  } -> (tensor<3xf32>, tensor<3xi64>)
  %min:2 = linalg.generic {indexing_maps = [#map, #red, #red],
                           iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<3x4xf32>) outs(%gv, %gi : tensor<3xf32>, tensor<3xi64>) {
  ^bb0(%in: f32, %old: f32, %oldi: i64):
    %i = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i64
    %m = arith.minimumf %in, %old : f32
    %lt = arith.cmpf olt, %in, %old : f32
    %sel = arith.select %lt, %ii, %oldi : i64
    linalg.yield %m, %sel : f32, i64
  } -> (tensor<3xf32>, tensor<3xi64>)
  return %max#0, %max#1, %min#0, %min#1
      : tensor<3xf32>, tensor<3xi64>, tensor<3xf32>, tensor<3xi64>
}
)mlir");
  ASSERT_TRUE(f);
  Tensor x = torch::tensor({{1.0f, 5.0f, 5.0f, 2.0f},
                            {-1.0f, -1.0f, -3.0f, -3.0f},
                            {0.f, 0.f, 0.f, 0.f}});
  std::vector<Tensor> r = evaluate(f, {x}, torch::kFloat32);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_TRUE(torch::equal(r[0], torch::tensor({5.0f, -1.0f, 0.0f})));
  EXPECT_TRUE(torch::equal(r[1], torch::tensor(std::vector<int64_t>{1, 0, 0})));
  EXPECT_TRUE(torch::equal(r[2], torch::tensor({-2.0f, -3.0f, -2.0f})));
  EXPECT_TRUE(torch::equal(r[3], torch::tensor(std::vector<int64_t>{7, 2, 7})));
  // NaN has no defined arg-max here: an error, not a number.
  Tensor xn = x.clone();
  xn[0][1] = std::nanf("");
  std::string diag = evaluateExpectingFailure(f, {xn}, torch::kFloat32);
  EXPECT_NE(diag.find("arg-max/min of values that contain NaN"),
            std::string::npos)
      << diag;
}

// tosa.argmax as tosa-to-linalg lowers it: both outputs are selects on
// `cmpf ugt %in, %max and cmpf ord %max, %max` (NaN-propagating); a select
// max (`select(x < out, x, out)` for a min) without an index output too.
TEST_F(EvaluatorTest, ArgMaxAndSelectMaxLikeTosa) {
  func::FuncOp f = parse(R"mlir(
#map = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0)>
func.func @argmax(%x: tensor<3x4xf32>)
    -> (tensor<3xi32>, tensor<3xf32>, tensor<3xf32>) {
  %lowest = arith.constant -3.40282347E+38 : f32
  %c0i = arith.constant 0 : i32
  %big = arith.constant 3.0 : f32
  %ev = tensor.empty() : tensor<3xf32>
  %fv = linalg.fill ins(%lowest : f32) outs(%ev : tensor<3xf32>) -> tensor<3xf32>
  %gv = linalg.fill ins(%big : f32) outs(%ev : tensor<3xf32>) -> tensor<3xf32>
  %ei = tensor.empty() : tensor<3xi32>
  %fi = linalg.fill ins(%c0i : i32) outs(%ei : tensor<3xi32>) -> tensor<3xi32>
  %am:2 = linalg.generic {indexing_maps = [#map, #red, #red],
                          iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<3x4xf32>) outs(%fi, %fv : tensor<3xi32>, tensor<3xf32>) {
  ^bb0(%in: f32, %oldi: i32, %old: f32):
    %i = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i32
    %gt = arith.cmpf ugt, %in, %old : f32
    %ord = arith.cmpf ord, %old, %old : f32
    %take = arith.andi %gt, %ord : i1
    %m = arith.select %take, %in, %old : f32
    %sel = arith.select %take, %ii, %oldi : i32
    linalg.yield %sel, %m : i32, f32
  } -> (tensor<3xi32>, tensor<3xf32>)
  %min = linalg.generic {indexing_maps = [#map, #red],
                         iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<3x4xf32>) outs(%gv : tensor<3xf32>) {
  ^bb0(%in: f32, %old: f32):
    %lt = arith.cmpf olt, %in, %old : f32
    %m = arith.select %lt, %in, %old : f32
    linalg.yield %m : f32
  } -> tensor<3xf32>
  return %am#0, %am#1, %min : tensor<3xi32>, tensor<3xf32>, tensor<3xf32>
}
)mlir");
  ASSERT_TRUE(f);
  Tensor x = torch::tensor({{1.0f, 5.0f, 5.0f, 2.0f},
                            {-1.0f, -1.0f, -3.0f, -3.0f},
                            {4.f, 6.f, 4.f, 5.f}});
  std::vector<Tensor> r = evaluate(f, {x}, torch::kFloat32);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_TRUE(torch::equal(r[0], torch::tensor(std::vector<int32_t>{1, 0, 1})));
  EXPECT_TRUE(torch::equal(r[1], torch::tensor({5.0f, -1.0f, 6.0f})));
  EXPECT_TRUE(torch::equal(r[2], torch::tensor({1.0f, -3.0f, 3.0f})));
  // With NaN the select forms are not max/min: an error, not a number.
  Tensor xn = x.clone();
  xn[2][3] = std::nanf("");
  std::string diag = evaluateExpectingFailure(f, {xn}, torch::kFloat32);
  EXPECT_NE(diag.find("that contain NaN"), std::string::npos) << diag;
}

// aten.embedding as TorchToLinalg lowers it: a generic over [indices...,
// D] that gathers `tensor.extract %weight[index_cast(ids), linalg.index 2]`;
// the gradient of the weight accumulates over repeated ids. And a keepdim
// output on the einsum fast path (`out[i, 0] += x[i, j] * x[i, j]`).
TEST_F(EvaluatorTest, EmbeddingGatherAndKeepdimContraction) {
  func::FuncOp f = parse(R"mlir(
func.func @embed(%ids: tensor<2x3xi64>, %w: tensor<5x4xf32>)
    -> (tensor<2x3x4xf32>, tensor<5x1xf32>) {
  %e = tensor.empty() : tensor<2x3x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>,
                                        affine_map<(d0, d1, d2) -> (d0, d1, d2)>],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<2x3xi64>) outs(%e : tensor<2x3x4xf32>) {
  ^bb0(%id: i64, %o: f32):
    %i = arith.index_cast %id : i64 to index
    %j = linalg.index 2 : index
    %v = tensor.extract %w[%i, %j] : tensor<5x4xf32>
    linalg.yield %v : f32
  } -> tensor<2x3x4xf32>
  %zero = arith.constant 0.0 : f32
  %e51 = tensor.empty() : tensor<5x1xf32>
  %z51 = linalg.fill ins(%zero : f32) outs(%e51 : tensor<5x1xf32>) -> tensor<5x1xf32>
  %sq = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                         affine_map<(d0, d1) -> (d0, d1)>,
                                         affine_map<(d0, d1) -> (d0, 0)>],
                        iterator_types = ["parallel", "reduction"]}
      ins(%w, %w : tensor<5x4xf32>, tensor<5x4xf32>) outs(%z51 : tensor<5x1xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<5x1xf32>
  return %r, %sq : tensor<2x3x4xf32>, tensor<5x1xf32>
}
)mlir");
  ASSERT_TRUE(f);
  torch::manual_seed(16);
  Tensor ids =
      torch::tensor(std::vector<int64_t>{0, 4, 4, 2, 0, 4}).reshape({2, 3});
  Tensor w = torch::randn({5, 4}, torch::kDouble).requires_grad_(true);
  std::vector<Tensor> r = evaluate(f, {ids, w}, torch::kFloat64);
  ASSERT_EQ(r.size(), 2u);
  Tensor ref = torch::embedding(w, ids);
  EXPECT_TRUE(torch::equal(r[0], ref));
  EXPECT_LE(relError(r[1], (w * w).sum(1, /*keepdim=*/true)), 1e-15);
  Tensor seed = torch::randn({2, 3, 4}, torch::kDouble);
  EXPECT_LE(
      relError(gradients(r[0], seed, {w})[0], gradients(ref, seed, {w})[0]),
      1e-15);
  EXPECT_LE(relError(torch::autograd::grad({r[1].sum()}, {w})[0], 2 * w),
            1e-15);
}

// gacc.scatter_add (the embedding's gradient) is index_add along the rows of
// its init, differentiable in its updates and init, in float64 and in the
// graph's own type (bf16 too); an index outside the rows is an error at the
// op, as the compiled step reports it.
TEST_F(EvaluatorTest, ScatterAddIsIndexAddAlongRows) {
  func::FuncOp f = parse(R"mlir(
func.func @scatter(%u: tensor<2x3x4xf32>, %ids: tensor<2x3xi64>,
                   %init: tensor<5x4xf32>) -> tensor<5x4xf32> {
  %r = gacc.scatter_add ins(%u, %ids : tensor<2x3x4xf32>, tensor<2x3xi64>) outs(%init : tensor<5x4xf32>) -> tensor<5x4xf32>
  return %r : tensor<5x4xf32>
}
)mlir");
  ASSERT_TRUE(f);
  torch::manual_seed(17);
  Tensor ids =
      torch::tensor(std::vector<int64_t>{0, 4, 4, 2, 0, 4}).reshape({2, 3});
  Tensor u = torch::randn({2, 3, 4}, torch::kDouble).requires_grad_(true);
  Tensor init = torch::randn({5, 4}, torch::kDouble).requires_grad_(true);
  std::vector<Tensor> r = evaluate(f, {u, ids, init}, torch::kFloat64);
  ASSERT_EQ(r.size(), 1u);
  Tensor ref = init.index_put({ids.reshape({-1})}, u.reshape({6, 4}),
                              /*accumulate=*/true);
  EXPECT_LE(relError(r[0], ref), 1e-15);
  // Autograd: d/du gathers the seed's rows, d/dinit is the seed.
  Tensor seed = torch::randn({5, 4}, torch::kDouble);
  std::vector<Tensor> grads = gradients(r[0], seed, {u, init});
  EXPECT_LE(relError(grads[0], torch::embedding(seed, ids)), 1e-15);
  EXPECT_LE(relError(grads[1], seed), 1e-15);

  std::string diag = evaluateExpectingFailure(
      f,
      {torch::zeros({2, 3, 4}),
       torch::tensor(std::vector<int64_t>{0, 1, 7, 2, -1, 4}).reshape({2, 3}),
       torch::zeros({5, 4})},
      torch::kFloat32);
  EXPECT_NE(diag.find("cannot evaluate 'gacc.scatter_add' with LibTorch: "
                      "index 7 out of range [0, 5) in scatter_add (2 "
                      "out-of-range positions)"),
            std::string::npos)
      << diag;

  func::FuncOp g = parse(R"mlir(
func.func @scatter_bf16(%u: tensor<3x2xbf16>, %ids: tensor<3xi32>,
                        %init: tensor<4x2xbf16>) -> tensor<4x2xbf16> {
  %r = gacc.scatter_add ins(%u, %ids : tensor<3x2xbf16>, tensor<3xi32>) outs(%init : tensor<4x2xbf16>) -> tensor<4x2xbf16>
  return %r : tensor<4x2xbf16>
}
)mlir");
  ASSERT_TRUE(g);
  Tensor u16 = torch::randn({3, 2}).to(torch::kBFloat16);
  Tensor ids32 = torch::tensor(std::vector<int32_t>{3, 1, 3});
  Tensor init16 = torch::zeros({4, 2}, torch::kBFloat16);
  r = evaluate(g, {u16, ids32, init16}, torch::kFloat32);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(
      torch::equal(r[0], init16.index_add(0, ids32.to(torch::kLong), u16)));
}

// Layer norm over the last dimension as TorchToLinalg writes it: keepdim
// mean and variance ([N, 1] outputs through `(d0, 0)`), then the normalized
// value with `(d0, 0)` broadcasts and an affine [D] scale and shift.
TEST_F(EvaluatorTest, LayerNormWithKeepdimMaps) {
  func::FuncOp f = parse(R"mlir(
#map = affine_map<(d0, d1) -> (d0, d1)>
#keep = affine_map<(d0, d1) -> (d0, 0)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @layer_norm(%x: tensor<3x6xf32>, %g: tensor<6xf32>, %b: tensor<6xf32>)
    -> tensor<3x6xf32> {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 6.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %e31 = tensor.empty() : tensor<3x1xf32>
  %z31 = linalg.fill ins(%zero : f32) outs(%e31 : tensor<3x1xf32>) -> tensor<3x1xf32>
  %sum = linalg.generic {indexing_maps = [#map, #keep],
                         iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<3x6xf32>) outs(%z31 : tensor<3x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<3x1xf32>
  %e = tensor.empty() : tensor<3x6xf32>
  %cen = linalg.generic {indexing_maps = [#map, #keep, #map],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<3x6xf32>, tensor<3x1xf32>) outs(%e : tensor<3x6xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %m = arith.divf %s, %n : f32
    %c = arith.subf %a, %m : f32
    linalg.yield %c : f32
  } -> tensor<3x6xf32>
  %ss = linalg.generic {indexing_maps = [#map, #keep],
                        iterator_types = ["parallel", "reduction"]}
      ins(%cen : tensor<3x6xf32>) outs(%z31 : tensor<3x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %sq = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  } -> tensor<3x1xf32>
  %y = linalg.generic {indexing_maps = [#map, #keep, #col, #col, #map],
                       iterator_types = ["parallel", "parallel"]}
      ins(%cen, %ss, %g, %b : tensor<3x6xf32>, tensor<3x1xf32>, tensor<6xf32>, tensor<6xf32>)
      outs(%e : tensor<3x6xf32>) {
  ^bb0(%c: f32, %s: f32, %gi: f32, %bi: f32, %o: f32):
    %var = arith.divf %s, %n : f32
    %ve = arith.addf %var, %eps : f32
    %r = math.rsqrt %ve : f32
    %nrm = arith.mulf %c, %r : f32
    %sc = arith.mulf %nrm, %gi : f32
    %sh = arith.addf %sc, %bi : f32
    linalg.yield %sh : f32
  } -> tensor<3x6xf32>
  return %y : tensor<3x6xf32>
}
)mlir");
  ASSERT_TRUE(f);
  torch::manual_seed(12);
  Tensor x = torch::randn({3, 6}, torch::kDouble).requires_grad_(true);
  Tensor g = torch::randn({6}, torch::kDouble).requires_grad_(true);
  Tensor b = torch::randn({6}, torch::kDouble).requires_grad_(true);
  // The f32 constant 1e-5 is what the graph uses, also in float64.
  double eps = static_cast<double>(1.0e-5f);
  std::vector<Tensor> r = evaluate(f, {x, g, b}, torch::kFloat64);
  ASSERT_EQ(r.size(), 1u);
  Tensor ref = torch::layer_norm(x, {6}, g, b, eps);
  EXPECT_LE(relError(r[0], ref), 1e-13);
  Tensor seed = torch::randn({3, 6}, torch::kDouble);
  std::vector<Tensor> got = gradients(r[0], seed, {x, g, b});
  std::vector<Tensor> want = gradients(ref, seed, {x, g, b});
  for (unsigned i = 0; i < 3; ++i)
    EXPECT_LE(relError(got[i], want[i]), 1e-12) << "input #" << i;
}

// Batch-1 graphs: maps that index a size-1 dimension with the constant 0,
// on inputs (`(d0) -> (0)` broadcasts) and on outputs (a keepdim total).
TEST_F(EvaluatorTest, ConstantZeroIndicesOfSizeOneDimensions) {
  func::FuncOp f = parse(R"mlir(
func.func @batch1(%s: tensor<1xf32>, %x: tensor<1x3xf32>)
    -> (tensor<3xf32>, tensor<1xf32>, tensor<1x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %e3 = tensor.empty() : tensor<3xf32>
  %bc = linalg.generic {indexing_maps = [affine_map<(d0) -> (0)>,
                                         affine_map<(d0) -> (0, d0)>,
                                         affine_map<(d0) -> (d0)>],
                        iterator_types = ["parallel"]}
      ins(%s, %x : tensor<1xf32>, tensor<1x3xf32>) outs(%e3 : tensor<3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<3xf32>
  %e1 = tensor.empty() : tensor<1xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1xf32>) -> tensor<1xf32>
  %tot = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>,
                                          affine_map<(d0) -> (0)>],
                         iterator_types = ["reduction"]}
      ins(%bc : tensor<3xf32>) outs(%z1 : tensor<1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %a, %acc : f32
    linalg.yield %t : f32
  } -> tensor<1xf32>
  %e13 = tensor.empty() : tensor<1x3xf32>
  %sq = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (0, d1)>,
                                         affine_map<(d0, d1) -> (d0, d1)>],
                        iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<1x3xf32>) outs(%e13 : tensor<1x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.mulf %a, %a : f32
    linalg.yield %t : f32
  } -> tensor<1x3xf32>
  return %bc, %tot, %sq : tensor<3xf32>, tensor<1xf32>, tensor<1x3xf32>
}
)mlir");
  ASSERT_TRUE(f);
  Tensor s = torch::tensor({2.0}, torch::kDouble).requires_grad_(true);
  Tensor x = torch::tensor({{1.0, -2.0, 4.0}}, torch::kDouble);
  std::vector<Tensor> r = evaluate(f, {s, x}, torch::kFloat64);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_TRUE(torch::equal(r[0].detach(),
                           torch::tensor({2.0, -4.0, 8.0}, torch::kDouble)));
  EXPECT_TRUE(
      torch::equal(r[1].detach(), torch::tensor({6.0}, torch::kDouble)));
  EXPECT_TRUE(torch::equal(r[2], x * x));
  Tensor g = torch::autograd::grad({r[1].sum()}, {s})[0];
  EXPECT_EQ(g.item<double>(), 3.0);
}

// A keepdim output whose constant index is not the only position: the other
// positions keep the output operand's values.
TEST_F(EvaluatorTest, ConstantOutputIndexWritesOnlyItsPosition) {
  func::FuncOp f = parse(R"mlir(
func.func @col(%x: tensor<2x3xf32>, %init: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                        affine_map<(d0, d1) -> (d0, 2)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<2x3xf32>) outs(%init : tensor<2x4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.maximumf %acc, %a : f32
    linalg.yield %t : f32
  } -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}
)mlir");
  ASSERT_TRUE(f);
  Tensor x =
      torch::tensor({{1.0, 5.0, 3.0}, {-1.0, -7.0, -2.0}}, torch::kDouble);
  Tensor init = torch::full({2, 4}, -3.0, torch::kDouble);
  std::vector<Tensor> r = evaluate(f, {x, init}, torch::kFloat64);
  ASSERT_EQ(r.size(), 1u);
  Tensor want = init.clone();
  want.index_put_({torch::indexing::Slice(), 2},
                  torch::tensor({5.0, -1.0}, torch::kDouble));
  EXPECT_TRUE(torch::equal(r[0], want)) << r[0];
}

// A padded, strided convolution as TorchToLinalg lowers aten.convolution
// (tensor.pad, linalg.broadcast of the bias, linalg.conv_2d_nchw_fchw) and
// aten.convolution_backward: the input gradient as a generic over the
// gradient scattered with strides by insert_slice and the weight flipped by
// an extract-gather, `(d0, d4, d5 + d2, d6 + d3)`; the weight gradient as a
// generic over the padded input, `(d4, d1, d2 + d5 * 2, d3 + d6 * 2)`.
TEST_F(EvaluatorTest, ConvolutionForwardAndBackwardLikeTorchMlir) {
  func::FuncOp f = parse(R"mlir(
func.func @conv(%x: tensor<2x3x7x7xf32>, %w: tensor<4x3x3x3xf32>,
                %bias: tensor<4xf32>, %gy: tensor<2x4x4x4xf32>)
    -> (tensor<2x4x4x4xf32>, tensor<2x3x7x7xf32>, tensor<4x3x3x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %xp = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<2x3x7x7xf32> to tensor<2x3x9x9xf32>
  %ey = tensor.empty() : tensor<2x4x4x4xf32>
  %yb = linalg.broadcast ins(%bias : tensor<4xf32>)
          outs(%ey : tensor<2x4x4x4xf32>) dimensions = [0, 2, 3]
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>,
                                 strides = dense<2> : tensor<2xi64>}
         ins(%xp, %w : tensor<2x3x9x9xf32>, tensor<4x3x3x3xf32>)
         outs(%yb : tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>

  // Input gradient.
  %ew = tensor.empty() : tensor<4x3x3x3xf32>
  %wf = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>,
                       affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%w : tensor<4x3x3x3xf32>) outs(%ew : tensor<4x3x3x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %c2 = arith.constant 2 : index
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %i2 = linalg.index 2 : index
    %i3 = linalg.index 3 : index
    %f2 = arith.subi %c2, %i2 : index
    %f3 = arith.subi %c2, %i3 : index
    %v = tensor.extract %w[%i0, %i1, %f2, %f3] : tensor<4x3x3x3xf32>
    linalg.yield %v : f32
  } -> tensor<4x3x3x3xf32>
  %z = arith.constant dense<0.0> : tensor<2x4x9x9xf32>
  %gys = tensor.insert_slice %gy into %z[0, 0, 1, 1] [2, 4, 4, 4] [1, 1, 2, 2]
           : tensor<2x4x4x4xf32> into tensor<2x4x9x9xf32>
  %ex = tensor.empty() : tensor<2x3x7x7xf32>
  %zx = linalg.fill ins(%zero : f32) outs(%ex : tensor<2x3x7x7xf32>) -> tensor<2x3x7x7xf32>
  %gx = linalg.generic {
      indexing_maps = [
        affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d5 + d2, d6 + d3)>,
        affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d1, d5, d6)>,
        affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel",
                        "reduction", "reduction", "reduction"]}
      ins(%gys, %wf : tensor<2x4x9x9xf32>, tensor<4x3x3x3xf32>)
      outs(%zx : tensor<2x3x7x7xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %m, %acc : f32
    linalg.yield %s : f32
  } -> tensor<2x3x7x7xf32>

  // Weight gradient.
  %zw = linalg.fill ins(%zero : f32) outs(%ew : tensor<4x3x3x3xf32>) -> tensor<4x3x3x3xf32>
  %gw = linalg.generic {
      indexing_maps = [
        affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d1, d2 + d5 * 2, d3 + d6 * 2)>,
        affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d0, d5, d6)>,
        affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel",
                        "reduction", "reduction", "reduction"]}
      ins(%xp, %gy : tensor<2x3x9x9xf32>, tensor<2x4x4x4xf32>)
      outs(%zw : tensor<4x3x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %m, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x3x3x3xf32>
  return %y, %gx, %gw
      : tensor<2x4x4x4xf32>, tensor<2x3x7x7xf32>, tensor<4x3x3x3xf32>
}
)mlir");
  ASSERT_TRUE(f);
  torch::manual_seed(13);
  Tensor x = torch::randn({2, 3, 7, 7}, torch::kDouble).requires_grad_(true);
  Tensor w = torch::randn({4, 3, 3, 3}, torch::kDouble).requires_grad_(true);
  Tensor bias = torch::randn({4}, torch::kDouble).requires_grad_(true);
  Tensor gy = torch::randn({2, 4, 4, 4}, torch::kDouble);
  std::vector<Tensor> r = evaluate(f, {x, w, bias, gy}, torch::kFloat64);
  ASSERT_EQ(r.size(), 3u);
  Tensor y = torch::conv2d(x, w, bias, /*stride=*/{2, 2},
                           /*padding=*/at::IntArrayRef{1, 1});
  EXPECT_LE(relError(r[0], y), 1e-14);
  std::vector<Tensor> want = gradients(y, gy, {x, w, bias});
  // The graph's backward forms compute what autograd computes ...
  EXPECT_LE(relError(r[1], want[0]), 1e-14);
  EXPECT_LE(relError(r[2], want[1]), 1e-14);
  // ... and autograd flows through the evaluated forward convolution.
  std::vector<Tensor> got = gradients(r[0], gy, {x, w, bias});
  for (unsigned i = 0; i < 3; ++i)
    EXPECT_LE(relError(got[i], want[i]), 1e-14) << "input #" << i;
  // Float32 agrees.
  std::vector<Tensor> r32 =
      evaluate(f,
               {x.detach().to(torch::kFloat), w.detach().to(torch::kFloat),
                bias.detach().to(torch::kFloat), gy.to(torch::kFloat)},
               torch::kFloat32);
  ASSERT_EQ(r32.size(), 3u);
  for (unsigned j = 0; j < 3; ++j)
    EXPECT_LE(relError(r32[j], r[j]), 1e-5) << "result #" << j;
}

// The other named convolution and pooling ops, with strides and dilations.
TEST_F(EvaluatorTest, NamedConvolutionAndPoolingOps) {
  func::FuncOp f = parse(R"mlir(
func.func @named(%x: tensor<2x3x7x7xf32>, %dw: tensor<3x3x3xf32>,
                 %xh: tensor<2x7x7x3xf32>, %wh: tensor<3x3x3x4xf32>)
    -> (tensor<2x3x3x3xf32>, tensor<2x5x5x4xf32>, tensor<2x3x3x3xf32>,
        tensor<2x3x3x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<2x3x3x3xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3x3x3xf32>) -> tensor<2x3x3x3xf32>
  %dconv = linalg.depthwise_conv_2d_nchw_chw
      {dilations = dense<2> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %dw : tensor<2x3x7x7xf32>, tensor<3x3x3xf32>)
      outs(%z : tensor<2x3x3x3xf32>) -> tensor<2x3x3x3xf32>
  %eh = tensor.empty() : tensor<2x5x5x4xf32>
  %zh = linalg.fill ins(%zero : f32) outs(%eh : tensor<2x5x5x4xf32>) -> tensor<2x5x5x4xf32>
  %hconv = linalg.conv_2d_nhwc_hwcf
      {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%xh, %wh : tensor<2x7x7x3xf32>, tensor<3x3x3x4xf32>)
      outs(%zh : tensor<2x5x5x4xf32>) -> tensor<2x5x5x4xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %m = linalg.fill ins(%ninf : f32) outs(%e : tensor<2x3x3x3xf32>) -> tensor<2x3x3x3xf32>
  %maxp = linalg.pooling_nchw_max
      {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %win : tensor<2x3x7x7xf32>, tensor<3x3xf32>)
      outs(%m : tensor<2x3x3x3xf32>) -> tensor<2x3x3x3xf32>
  %sump = linalg.pooling_nchw_sum
      {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %win : tensor<2x3x7x7xf32>, tensor<3x3xf32>)
      outs(%z : tensor<2x3x3x3xf32>) -> tensor<2x3x3x3xf32>
  return %dconv, %hconv, %maxp, %sump
      : tensor<2x3x3x3xf32>, tensor<2x5x5x4xf32>, tensor<2x3x3x3xf32>,
        tensor<2x3x3x3xf32>
}
)mlir");
  ASSERT_TRUE(f);
  torch::manual_seed(14);
  Tensor x = torch::randn({2, 3, 7, 7}, torch::kDouble).requires_grad_(true);
  Tensor dw = torch::randn({3, 3, 3}, torch::kDouble).requires_grad_(true);
  Tensor xh = torch::randn({2, 7, 7, 3}, torch::kDouble).requires_grad_(true);
  Tensor wh = torch::randn({3, 3, 3, 4}, torch::kDouble).requires_grad_(true);
  std::vector<Tensor> r = evaluate(f, {x, dw, xh, wh}, torch::kFloat64);
  ASSERT_EQ(r.size(), 4u);
  std::vector<Tensor> want = {
      torch::conv2d(x, dw.unsqueeze(1), Tensor(), /*stride=*/{1, 1},
                    /*padding=*/at::IntArrayRef{0, 0}, /*dilation=*/{2, 2},
                    /*groups=*/3),
      torch::conv2d(xh.permute({0, 3, 1, 2}), wh.permute({3, 2, 0, 1}))
          .permute({0, 2, 3, 1}),
      torch::max_pool2d(x, 3, 2), torch::avg_pool2d(x, 3, 2) * 9};
  for (unsigned j = 0; j < 4; ++j) {
    EXPECT_LE(relError(r[j], want[j]), 1e-14) << "result #" << j;
    Tensor seed = torch::randn(want[j].sizes(), torch::kDouble);
    std::vector<Tensor> inputs = {x, dw, xh, wh};
    std::vector<Tensor> got = gradients(r[j], seed, inputs);
    std::vector<Tensor> ref = gradients(want[j], seed, inputs);
    for (unsigned i = 0; i < 4; ++i) {
      ASSERT_EQ(got[i].defined(), ref[i].defined()) << j << " " << i;
      if (ref[i].defined()) {
        EXPECT_LE(relError(got[i], ref[i]), 1e-13)
            << "result #" << j << ", input #" << i;
      }
    }
  }
}

// nll_loss as TorchToLinalg lowers aten.nll_loss_forward (mean, ignore_index
// -100) and aten.nll_loss_backward: the per-sample generic gathers
// `tensor.extract %logp[linalg.index 0, target]` also for ignored targets (an
// out-of-bounds read whose value the select discards), the count of valid
// targets is an integer reduction, the backward a generic over [N, C].
TEST_F(EvaluatorTest, NllLossGatherLikeTorchMlir) {
  func::FuncOp f = parse(R"mlir(
func.func @nll(%logp: tensor<4x5xf32>, %t: tensor<4xi64>)
    -> (tensor<f32>, tensor<4x5xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %ig = arith.constant -100 : i64
  %ign = arith.index_cast %ig : i64 to index
  %e4 = tensor.empty() : tensor<4xf32>
  %per = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>,
                                          affine_map<(d0) -> (d0)>],
                         iterator_types = ["parallel"]}
      ins(%t : tensor<4xi64>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%tv: i64, %o: f32):
    %it = arith.index_cast %tv : i64 to index
    %eq = arith.cmpi eq, %it, %ign : index
    %i = linalg.index 0 : index
    %v = tensor.extract %logp[%i, %it] : tensor<4x5xf32>
    %n = arith.negf %v : f32
    %s = arith.select %eq, %zero, %n : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %zi = arith.constant 0 : i32
  %ei = tensor.empty() : tensor<i32>
  %fi = linalg.fill ins(%zi : i32) outs(%ei : tensor<i32>) -> tensor<i32>
  %cnt = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>,
                                          affine_map<(d0) -> ()>],
                         iterator_types = ["reduction"]}
      ins(%t : tensor<4xi64>) outs(%fi : tensor<i32>) {
  ^bb0(%tv: i64, %acc: i32):
    %it = arith.index_cast %tv : i64 to index
    %ne = arith.cmpi ne, %it, %ign : index
    %x = arith.extui %ne : i1 to i32
    %a = arith.addi %acc, %x : i32
    linalg.yield %a : i32
  } -> tensor<i32>
  %cv = tensor.extract %cnt[] : tensor<i32>
  %cf = arith.sitofp %cv : i32 to f32
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>,
                                           affine_map<(d0) -> ()>],
                          iterator_types = ["reduction"]}
      ins(%per : tensor<4xf32>) outs(%f0 : tensor<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %d = arith.divf %v, %cf : f32
    %a = arith.addf %d, %acc : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  // Backward with grad_output = 1 and total_weight = the count.
  %gout = linalg.fill ins(%one : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %tw = linalg.fill ins(%cf : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %e45 = tensor.empty() : tensor<4x5xf32>
  %z45 = linalg.fill ins(%zero : f32) outs(%e45 : tensor<4x5xf32>) -> tensor<4x5xf32>
  %gin = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> ()>,
                                          affine_map<(d0, d1) -> (d0)>,
                                          affine_map<(d0, d1) -> ()>,
                                          affine_map<(d0, d1) -> (d0, d1)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%gout, %t, %tw : tensor<f32>, tensor<4xi64>, tensor<f32>)
      outs(%z45 : tensor<4x5xf32>) {
  ^bb0(%g: f32, %tv: i64, %w: f32, %o: f32):
    %it = arith.index_cast %tv : i64 to index
    %c = linalg.index 1 : index
    %gd = arith.divf %g, %w : f32
    %ng = arith.negf %gd : f32
    %wg = arith.mulf %one, %ng : f32
    %ne = arith.cmpi ne, %it, %c : index
    %eq = arith.cmpi eq, %it, %ign : index
    %isz = arith.ori %ne, %eq : i1
    %r = arith.select %isz, %zero, %wg : f32
    linalg.yield %r : f32
  } -> tensor<4x5xf32>
  return %loss, %gin : tensor<f32>, tensor<4x5xf32>
}
)mlir");
  ASSERT_TRUE(f);
  torch::manual_seed(15);
  Tensor logits = torch::randn({4, 5}, torch::kDouble).requires_grad_(true);
  Tensor logp = torch::log_softmax(logits, 1);
  Tensor t = torch::tensor(std::vector<int64_t>{3, -100, 0, 4});
  std::vector<Tensor> r = evaluate(f, {logp, t}, torch::kFloat64);
  ASSERT_EQ(r.size(), 2u);
  Tensor ref = torch::nll_loss(logp, t, {}, at::Reduction::Mean, -100);
  EXPECT_LE(relError(r[0], ref), 1e-15);
  // The graph's backward is autograd's gradient with respect to logp, and
  // autograd flows through the gather (nothing into the ignored row).
  Tensor glogp = torch::autograd::grad({ref}, {logp}, {}, true)[0];
  EXPECT_LE(relError(r[1], glogp), 1e-15);
  EXPECT_TRUE(
      torch::equal(r[1][1].detach(), torch::zeros({5}, torch::kDouble)));
  Tensor got = torch::autograd::grad({r[0]}, {logits}, {}, true)[0];
  Tensor want = torch::autograd::grad({ref}, {logits}, {}, true)[0];
  EXPECT_LE(relError(got, want), 1e-14);

  // The same read that reaches a result is an error, not a number.
  func::FuncOp g = parse(R"mlir(
func.func @oob(%logp: tensor<4x5xf32>, %t: tensor<4xi64>) -> tensor<4xf32> {
  %e4 = tensor.empty() : tensor<4xf32>
  %per = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>,
                                          affine_map<(d0) -> (d0)>],
                         iterator_types = ["parallel"]}
      ins(%t : tensor<4xi64>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%tv: i64, %o: f32):
    %it = arith.index_cast %tv : i64 to index
    %i = linalg.index 0 : index
    %v = tensor.extract %logp[%i, %it] : tensor<4x5xf32>
    %n = arith.negf %v : f32
    linalg.yield %n : f32
  } -> tensor<4xf32>
  return %per : tensor<4xf32>
}
)mlir");
  ASSERT_TRUE(g);
  std::string diag =
      evaluateExpectingFailure(g, {logp.detach(), t}, torch::kFloat64);
  EXPECT_NE(diag.find("cannot evaluate 'linalg.generic' with LibTorch: output "
                      "#0 depends on a tensor.extract that reads out of "
                      "bounds (at 1 points"),
            std::string::npos)
      << diag;
  // With all targets in range it evaluates.
  Tensor t2 = torch::tensor(std::vector<int64_t>{3, 1, 0, 4});
  std::vector<Tensor> r2 = evaluate(g, {logp.detach(), t2}, torch::kFloat64);
  ASSERT_EQ(r2.size(), 1u);
  EXPECT_TRUE(torch::equal(
      r2[0], -logp.detach().gather(1, t2.unsqueeze(1)).squeeze(1)));
}

// tensor.pad with dynamic and computed padding, concat, generate (with a
// gather), bitcast, dense_resource constants; gradients through pad and
// concat.
TEST_F(EvaluatorTest, PadConcatGenerateAndResources) {
  func::FuncOp f = parse(R"mlir(
func.func @forms(%a: tensor<2x3xf32>, %b: tensor<1x3xf32>, %lo: index,
                 %hi: index)
    -> (tensor<?x5xf32>, tensor<4x5xf32>, tensor<3x3xf32>, tensor<2x4xf32>,
        tensor<3xi32>, tensor<3xf32>, i32) {
  %zero = arith.constant 0.0 : f32
  %padd = tensor.pad %a low[%lo, 1] high[%hi, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<2x3xf32> to tensor<?x5xf32>
  %padr = tensor.pad %a low[1, 1] high[1, 1] {
  ^bb0(%i: index, %j: index):
    %s = arith.addi %i, %j : index
    %si = arith.index_cast %s : index to i64
    %f = arith.sitofp %si : i64 to f32
    tensor.yield %f : f32
  } : tensor<2x3xf32> to tensor<4x5xf32>
  %cat = tensor.concat dim(0) %a, %b
      : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<3x3xf32>
  %gen = tensor.generate {
  ^bb0(%i: index, %j: index):
    %c3 = arith.constant 3 : index
    %j3 = arith.remui %j, %c3 : index
    %v = tensor.extract %a[%i, %j3] : tensor<2x3xf32>
    tensor.yield %v : f32
  } : tensor<2x4xf32>
  %res = arith.constant dense_resource<blob1> : tensor<3xf32>
  %bits = tensor.bitcast %res : tensor<3xf32> to tensor<3xi32>
  %one = arith.constant 1.0 : f32
  %sbits = arith.bitcast %one : f32 to i32
  return %padd, %padr, %cat, %gen, %bits, %res, %sbits
      : tensor<?x5xf32>, tensor<4x5xf32>, tensor<3x3xf32>, tensor<2x4xf32>,
        tensor<3xi32>, tensor<3xf32>, i32
}
{-#
  dialect_resources: {
    builtin: {
      blob1: "0x040000000000803F0000004000004040"
    }
  }
#-}
)mlir");
  ASSERT_TRUE(f);
  using torch::indexing::Slice;
  Tensor a =
      torch::arange(6, torch::kDouble).reshape({2, 3}).requires_grad_(true);
  Tensor b = torch::full({1, 3}, 7.0, torch::kDouble).requires_grad_(true);
  Tensor lo = torch::tensor(int64_t(2)), hi = torch::tensor(int64_t(1));
  std::vector<Tensor> r = evaluate(f, {a, b, lo, hi}, torch::kFloat64);
  ASSERT_EQ(r.size(), 7u);
  EXPECT_TRUE(torch::equal(r[0], torch::constant_pad_nd(a, {1, 1, 2, 1})));
  Tensor padr = (torch::arange(4, torch::kDouble).unsqueeze(1) +
                 torch::arange(5, torch::kDouble))
                    .contiguous();
  padr.index_put_({Slice(1, 3), Slice(1, 4)}, a.detach());
  EXPECT_TRUE(torch::equal(r[1], padr)) << r[1];
  EXPECT_TRUE(torch::equal(r[2], torch::cat({a, b}, 0)));
  EXPECT_TRUE(
      torch::equal(r[3], torch::cat({a, a.index({Slice(), Slice(0, 1)})}, 1)));
  EXPECT_TRUE(torch::equal(
      r[4], torch::tensor({0x3F800000, 0x40000000, 0x40400000}, torch::kInt)));
  EXPECT_TRUE(
      torch::equal(r[5], torch::tensor({1.0, 2.0, 3.0}, torch::kDouble)));
  EXPECT_EQ(r[6].item<int32_t>(), 0x3F800000);
  std::vector<Tensor> g = torch::autograd::grad(
      {r[0].sum() + r[1].sum() + 2 * r[2].sum() + r[3].sum()}, {a, b});
  Tensor ga = torch::full({2, 3}, 5.0, torch::kDouble);
  ga.index_put_({Slice(), 0}, 6.0); // generate reads column 0 twice
  EXPECT_TRUE(torch::equal(g[0], ga)) << g[0];
  EXPECT_TRUE(torch::equal(g[1], torch::full({1, 3}, 2.0, torch::kDouble)));
}

// Padding with a scalar argument that requires grad, where the padded tensor
// is as small as the padding value (no copy would be made by a broadcast).
TEST_F(EvaluatorTest, PadWithArgumentValueIsDifferentiable) {
  func::FuncOp f = parse(R"mlir(
func.func @pad(%a: tensor<1xf32>, %p: f32) -> (tensor<1xf32>, tensor<3xf32>) {
  %same = tensor.pad %a low[0] high[0] {
  ^bb0(%i: index):
    tensor.yield %p : f32
  } : tensor<1xf32> to tensor<1xf32>
  %more = tensor.pad %a low[1] high[1] {
  ^bb0(%i: index):
    tensor.yield %p : f32
  } : tensor<1xf32> to tensor<3xf32>
  return %same, %more : tensor<1xf32>, tensor<3xf32>
}
)mlir");
  ASSERT_TRUE(f);
  Tensor a = torch::tensor({2.0}, torch::kDouble).requires_grad_(true);
  Tensor p = torch::tensor(5.0, torch::kDouble).requires_grad_(true);
  std::vector<Tensor> r = evaluate(f, {a, p}, torch::kFloat64);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(torch::equal(r[0].detach(), a.detach()));
  EXPECT_TRUE(torch::equal(r[1].detach(),
                           torch::tensor({5.0, 2.0, 5.0}, torch::kDouble)));
  std::vector<Tensor> g =
      torch::autograd::grad({r[0].sum() + r[1].sum()}, {a, p});
  EXPECT_EQ(g[0].item<double>(), 2.0);
  EXPECT_EQ(g[1].item<double>(), 2.0);
}

// Dead ops (results unused, no side effects) are not evaluated, even when
// they could not be; unused results of a live linalg op are skipped when the
// evaluator cannot compute them.
TEST_F(EvaluatorTest, DeadOpsAreSkipped) {
  func::FuncOp f = parse(R"mlir(
func.func @dead(%x: tensor<4xf32>, %i: tensor<4xi32>) -> tensor<4xf32> {
  %c9 = arith.constant 9 : index
  %bad = tensor.extract %x[%c9] : tensor<4xf32>
  %ct, %hi = arith.mului_extended %i, %i : tensor<4xi32>
  %e = tensor.empty() : tensor<4xf32>
  %dl = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>,
                                         affine_map<(d0) -> (d0)>],
                        iterator_types = ["parallel"]}
      ins(%ct : tensor<4xi32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: i32, %o: f32):
    %c, %h = arith.mului_extended %a, %a : i32
    %f = arith.sitofp %c : i32 to f32
    linalg.yield %f : f32
  } -> tensor<4xf32>
  %sq = arith.mulf %x, %x : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      outs(%e : tensor<4xf32>) {
  ^bb0(%o: f32):
    %k = linalg.index 0 : index
    %v = tensor.extract %sq[%k] : tensor<4xf32>
    linalg.yield %v : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
)mlir");
  ASSERT_TRUE(f);
  Tensor x = torch::tensor({1.0f, -2.0f, 3.0f, 0.5f});
  Tensor i = torch::ones({4}, torch::kInt);
  std::vector<Tensor> r = evaluate(f, {x, i}, torch::kFloat32);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(torch::equal(r[0], x * x));
  // The same on two ranks in lockstep.
  FailureOr<SmallVector<SmallVector<Tensor>>> ranks =
      gacc::evaluateWithTorchOnRanks(f, {{x, i}, {2 * x, i}}, torch::kFloat32);
  ASSERT_TRUE(succeeded(ranks));
  EXPECT_TRUE(torch::equal((*ranks)[1][0], 4 * x * x));
}

// ml_program constant globals and never-stored mutable globals read their
// initial value; a stored mutable global is an error.
TEST_F(EvaluatorTest, MlProgramGlobals) {
  func::FuncOp f = parse(R"mlir(
ml_program.global private @w(dense<[1.0, 2.0, 3.0]> : tensor<3xf32>) : tensor<3xf32>
ml_program.global private mutable @m(dense<4.0> : tensor<3xf32>) : tensor<3xf32>
func.func @step(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %w = ml_program.global_load_const @w : tensor<3xf32>
  %m = ml_program.global_load @m : tensor<3xf32>
  %y = arith.mulf %x, %w : tensor<3xf32>
  return %y, %m : tensor<3xf32>, tensor<3xf32>
}
)mlir");
  ASSERT_TRUE(f);
  Tensor x =
      torch::tensor({2.0, 2.0, 2.0}, torch::kDouble).requires_grad_(true);
  std::vector<Tensor> r = evaluate(f, {x}, torch::kFloat64);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(torch::equal(r[0].detach(),
                           torch::tensor({2.0, 4.0, 6.0}, torch::kDouble)));
  EXPECT_TRUE(torch::equal(r[1], torch::full({3}, 4.0, torch::kDouble)));
  EXPECT_TRUE(torch::equal(torch::autograd::grad({r[0].sum()}, {x})[0],
                           torch::tensor({1.0, 2.0, 3.0}, torch::kDouble)));

  func::FuncOp g = parse(R"mlir(
ml_program.global private mutable @m(dense<4.0> : tensor<3xf32>) : tensor<3xf32>
func.func @step(%x: tensor<3xf32>) -> tensor<3xf32> {
  %m = ml_program.global_load @m : tensor<3xf32>
  ml_program.global_store @m = %x : tensor<3xf32>
  return %m : tensor<3xf32>
}
)mlir");
  ASSERT_TRUE(g);
  std::string diag = evaluateExpectingFailure(
      g, {torch::zeros({3}, torch::kDouble)}, torch::kFloat64);
  EXPECT_NE(diag.find("cannot evaluate 'ml_program.global_load' with "
                      "LibTorch: the global @m is stored to"),
            std::string::npos)
      << diag;
}

// Any affine indexing map is evaluated by a gather: a Hankel matrix
// a[i + j], and a diagonal read a[i, i].
TEST_F(EvaluatorTest, AffineIndexingMapsGather) {
  func::FuncOp f = parse(R"mlir(
func.func @hankel(%a: tensor<7xf32>, %m: tensor<3x3xf32>)
    -> (tensor<4x4xf32>, tensor<3xf32>) {
  %e = tensor.empty() : tensor<4x4xf32>
  %r = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0 + d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<7xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<4x4xf32>
  %e3 = tensor.empty() : tensor<3xf32>
  %d = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0, d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%m : tensor<3x3xf32>) outs(%e3 : tensor<3xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<3xf32>
  return %r, %d : tensor<4x4xf32>, tensor<3xf32>
}
)mlir");
  ASSERT_TRUE(f);
  Tensor a = torch::arange(7, torch::kDouble).requires_grad_(true);
  Tensor m = torch::arange(9, torch::kDouble).reshape({3, 3});
  std::vector<Tensor> r = evaluate(f, {a, m}, torch::kFloat64);
  ASSERT_EQ(r.size(), 2u);
  Tensor ij = torch::arange(4, torch::kLong).unsqueeze(1) +
              torch::arange(4, torch::kLong);
  EXPECT_TRUE(torch::equal(r[0].detach(), ij.to(torch::kDouble)));
  EXPECT_TRUE(torch::equal(r[1], m.diagonal()));
  // Each a[k] appears min(k, 6 - k, 3) + 1 times.
  EXPECT_TRUE(torch::equal(
      torch::autograd::grad({r[0].sum()}, {a})[0],
      torch::tensor({1.0, 2.0, 3.0, 4.0, 3.0, 2.0, 1.0}, torch::kDouble)));
}

//===----------------------------------------------------------------------===//
// What cannot be evaluated gives a diagnostic, never a number
//===----------------------------------------------------------------------===//

TEST_F(EvaluatorTest, OutOfBoundsAndOversizedGathersAreErrors) {
  func::FuncOp f = parse(R"mlir(
func.func @hankel(%a: tensor<?xf32>) -> tensor<4x4xf32> {
  %e = tensor.empty() : tensor<4x4xf32>
  %r = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0 + d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<?xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
)mlir");
  ASSERT_TRUE(f);
  std::string diag =
      evaluateExpectingFailure(f, {torch::zeros({6})}, torch::kFloat32);
  EXPECT_NE(diag.find("cannot evaluate 'linalg.generic' with LibTorch: "
                      "indexing map (d0, d1) -> (d0 + d1) reads operand #0 "
                      "out of bounds in dimension 0 (indices 0 to 6, size 6)"),
            std::string::npos)
      << diag;

  // An iteration domain of 2^28 points is refused, not allocated.
  func::FuncOp g = parse(R"mlir(
func.func @big(%a: tensor<1024x256xf32>, %b: tensor<1024x256xf32>)
    -> tensor<1024x1024xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1024x1024xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %r = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                       affine_map<(d0, d1, d2) -> (d1, d2)>,
                       affine_map<(d0, d1, d2) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<1024x256xf32>, tensor<1024x256xf32>)
      outs(%z : tensor<1024x1024xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %t = math.tanh %m : f32
    %s = arith.addf %acc, %t : f32
    linalg.yield %s : f32
  } -> tensor<1024x1024xf32>
  return %r : tensor<1024x1024xf32>
}
)mlir");
  ASSERT_TRUE(g);
  diag = evaluateExpectingFailure(
      g, {torch::zeros({1024, 256}), torch::zeros({1024, 256})},
      torch::kFloat32);
  EXPECT_NE(diag.find("the iteration domain [1024, 1024, 256] has 268435456 "
                      "points (more than 2^27)"),
            std::string::npos)
      << diag;
}

TEST_F(EvaluatorTest, UnsupportedOpsAreErrors) {
  struct Case {
    const char *source;
    const char *opName;
    const char *reason;
  };
  const Case cases[] = {
      // An op the evaluator does not know, at function level.
      {R"mlir(
func.func @f(%a: tensor<4xi64>) -> tensor<4xi64> {
  %r, %h = arith.mului_extended %a, %a : tensor<4xi64>
  return %h : tensor<4xi64>
})mlir",
       "arith.mului_extended", "wider than 32 bits is not supported"},
      // ... and inside a payload.
      {R"mlir(
func.func @f(%a: tensor<4xi64>) -> tensor<4xi64> {
  %e = tensor.empty() : tensor<4xi64>
  %r = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%a : tensor<4xi64>) outs(%e : tensor<4xi64>) {
  ^bb0(%x: i64, %o: i64):
    %c, %h = arith.mulsi_extended %x, %x : i64
    linalg.yield %h : i64
  } -> tensor<4xi64>
  return %r : tensor<4xi64>
})mlir",
       "arith.mulsi_extended", "wider than 32 bits is not supported"},
      // A reduction whose combiner is not associative.
      {R"mlir(
func.func @f(%a: tensor<4xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%a : tensor<4xf32>) outs(%z : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.subf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
})mlir",
       "linalg.generic", "COMBINER(output, value)"},
      // The accumulated value used by something else than the combiner.
      {R"mlir(
func.func @f(%a: tensor<4xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%a : tensor<4xf32>) outs(%z : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %t = arith.mulf %acc, %x : f32
    %s = arith.addf %acc, %t : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
})mlir",
       "linalg.generic", "reduced output other than in its combiner"},
      // An out-of-bounds extract.
      {R"mlir(
func.func @f(%a: tensor<4xf32>, %i: index) -> f32 {
  %r = tensor.extract %a[%i] : tensor<4xf32>
  return %r : f32
})mlir",
       "tensor.extract", "out of bounds"},
  };
  for (const Case &c : cases) {
    func::FuncOp f = parse(c.source);
    ASSERT_TRUE(f) << c.source;
    std::vector<Tensor> args;
    for (Type type : f.getArgumentTypes()) {
      auto shape = *gacc::getTorchShape(type);
      args.push_back(
          torch::full(std::vector<int64_t>(shape.begin(), shape.end()), 4,
                      *gacc::getTorchElementDType(type)));
    }
    std::string diag = evaluateExpectingFailure(f, args, torch::kFloat32);
    EXPECT_NE(diag.find(std::string("cannot evaluate '") + c.opName +
                        "' with LibTorch: "),
              std::string::npos)
        << diag;
    EXPECT_NE(diag.find(c.reason), std::string::npos) << diag;
  }
}

TEST_F(EvaluatorTest, BadArgumentsAreErrors) {
  func::FuncOp f = loadExample("linear_regression.mlir");
  ASSERT_TRUE(f);
  Tensor w = torch::zeros({});
  std::string diag = evaluateExpectingFailure(
      f, {w, torch::zeros({5}), torch::zeros({4})}, torch::kFloat32);
  EXPECT_NE(diag.find("argument #1 has shape [5]"), std::string::npos) << diag;
  diag = evaluateExpectingFailure(f, {w, torch::zeros({4})}, torch::kFloat32);
  EXPECT_NE(diag.find("3 arguments"), std::string::npos) << diag;
  diag = evaluateExpectingFailure(
      f, {w, torch::zeros({4}, torch::kLong), torch::zeros({4})},
      torch::kFloat32);
  EXPECT_NE(diag.find("argument #1 has dtype"), std::string::npos) << diag;
  diag = evaluateExpectingFailure(f, {w, torch::zeros({4}), torch::zeros({4})},
                                  torch::kFloat16);
  EXPECT_NE(diag.find("compute type"), std::string::npos) << diag;
  // Float arguments of another float dtype are converted.
  std::vector<Tensor> r =
      evaluate(f,
               {w.to(torch::kDouble), torch::ones({4}, torch::kDouble),
                torch::ones({4})},
               torch::kFloat32);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].scalar_type(), torch::kFloat);
  EXPECT_EQ(r[0].item<float>(), 1.0f);
}

} // namespace
