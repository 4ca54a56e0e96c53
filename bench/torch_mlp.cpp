//===- torch_mlp.cpp - LibTorch eager gradient accumulation -----*- C++ -*-===//
//
// The baseline of the MLP benchmark: the same MLP as bench/gen_mlp.py
// (ReLU hidden layers, softmax cross-entropy, mean over the batch, SGD) with
// the standard eager recipe for m micro-batches: for each micro-batch,
// forward, loss / m, backward (gradients accumulate in .grad); then
// optimizer.step() and zero_grad().
//
//   gacc-bench-torch-mlp --batch B --dims D0,...,DL --micro-batches M
//                        [--steps K] [--warmup W] [--threads T]
//
// Prints the median and mean step time and the loss of the last step.
//
//===----------------------------------------------------------------------===//

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  int64_t batch = 64, microBatches = 1, steps = 20, warmup = 3, threads = 1;
  std::vector<int64_t> dims{32, 64, 10};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--batch")
      batch = std::stoll(value);
    else if (flag == "--micro-batches")
      microBatches = std::stoll(value);
    else if (flag == "--steps")
      steps = std::stoll(value);
    else if (flag == "--warmup")
      warmup = std::stoll(value);
    else if (flag == "--threads")
      threads = std::stoll(value);
    else if (flag == "--dims") {
      dims.clear();
      std::stringstream ss(value);
      for (std::string d; std::getline(ss, d, ',');)
        dims.push_back(std::stoll(d));
    } else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (batch % microBatches != 0) {
    std::fprintf(stderr, "batch must be a multiple of micro-batches\n");
    return 2;
  }
  torch::set_num_threads(threads);
  torch::manual_seed(0);

  torch::nn::Sequential model;
  for (size_t l = 1; l < dims.size(); ++l) {
    model->push_back(torch::nn::Linear(dims[l - 1], dims[l]));
    if (l + 1 < dims.size())
      model->push_back(torch::nn::ReLU());
  }
  torch::optim::SGD optimizer(model->parameters(), /*lr=*/0.1);
  torch::Tensor x = torch::randn({batch, dims.front()});
  torch::Tensor y = torch::randint(dims.back(), {batch}, torch::kLong);
  int64_t b = batch / microBatches;

  std::vector<double> times;
  double loss = 0;
  for (int64_t s = 0; s < warmup + steps; ++s) {
    auto start = std::chrono::steady_clock::now();
    loss = 0;
    for (int64_t k = 0; k < microBatches; ++k) {
      torch::Tensor xk = x.narrow(0, k * b, b), yk = y.narrow(0, k * b, b);
      torch::Tensor l =
          torch::nn::functional::cross_entropy(model->forward(xk), yk) /
          static_cast<double>(microBatches);
      l.backward();
      loss += l.item<double>();
    }
    optimizer.step();
    optimizer.zero_grad();
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    if (s >= warmup)
      times.push_back(ms);
  }
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  double mean = 0;
  for (double t : times)
    mean += t;
  mean /= times.size();
  std::printf("torch: time/step median %.3f ms (mean %.3f ms), loss %.6g\n",
              sorted[sorted.size() / 2], mean, loss);
  return 0;
}
